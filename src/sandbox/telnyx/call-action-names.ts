/** The Call Control commands the sandbox carries out (POST /v2/calls/{id}/actions/{action}). */
export const CALL_ACTIONS = ['answer', 'bridge', 'hangup', 'record_start', 'transcription_start'] as const;
export type CallAction = (typeof CALL_ACTIONS)[number];

export const isCallAction = (name: string): name is CallAction => (CALL_ACTIONS as readonly string[]).includes(name);
