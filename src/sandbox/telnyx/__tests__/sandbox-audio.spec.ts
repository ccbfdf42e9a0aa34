import { describe, expect, it } from '@jest/globals';
import { silentMp3, silentWav } from '../sandbox-audio.js';

describe('stand-in recording audio', () => {
  it('is a well-formed silent WAV of the recording length, capped at 10 s', () => {
    const wav = silentWav(1500);
    expect(wav.toString('ascii', 0, 4)).toBe('RIFF');
    expect(wav.toString('ascii', 8, 16)).toBe('WAVEfmt ');
    expect(wav.readUInt32LE(4)).toBe(wav.length - 8);
    expect(wav.readUInt32LE(24)).toBe(8000);
    expect(wav.readUInt32LE(40)).toBe(12_000);
    expect(wav.subarray(44).every((b) => b === 0x80)).toBe(true);
    expect(silentWav(60_000).readUInt32LE(40)).toBe(80_000);
  });

  it('is whole MPEG-1 Layer III frames, each starting with its frame sync', () => {
    const mp3 = silentMp3(1000);
    expect(mp3.length % 144).toBe(0);
    expect(mp3.length / 144).toBe(28);
    for (let i = 0; i < mp3.length; i += 144) expect([...mp3.subarray(i, i + 4)]).toEqual([0xff, 0xfb, 0x18, 0xc0]);
    expect(silentMp3(0).length).toBe(144);
  });
});
