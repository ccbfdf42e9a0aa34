// Types of channel-of-one.mjs (a plain ES module: jest loads the runner before any TypeScript hook).

export declare const ASK: 'jest-light-runner-get-worker-data';

export interface Channel {
  onMessage(listener: (message: unknown) => void): void;
  postMessage(message: unknown): void;
}

export declare function channelOfOne(shared: Channel): Channel;
