/**
 * Stand-in audio for the sandbox's recording URLs: silence of the recording's length (at most
 * MAX_AUDIO_MS), as a WAV (8 kHz, 8-bit mono PCM) or an MP3 (MPEG-1 Layer III, 32 kbit/s, 32 kHz
 * mono frames whose empty side information decodes to silence).
 */
const MAX_AUDIO_MS = 10_000;
const WAV_RATE = 8000;
const MP3_FRAME = Buffer.from([0xff, 0xfb, 0x18, 0xc0]);
const MP3_FRAME_BYTES = 144;
const MP3_FRAME_MS = 36;

const clamp = (ms: number) => Math.max(0, Math.min(ms, MAX_AUDIO_MS));

export function silentWav(ms: number): Buffer {
  const samples = Math.round((clamp(ms) * WAV_RATE) / 1000);
  const out = Buffer.alloc(44 + samples, 0x80);
  out.write('RIFF', 0, 'ascii');
  out.writeUInt32LE(36 + samples, 4);
  out.write('WAVEfmt ', 8, 'ascii');
  out.writeUInt32LE(16, 16);
  out.writeUInt16LE(1, 20); // PCM
  out.writeUInt16LE(1, 22); // mono
  out.writeUInt32LE(WAV_RATE, 24);
  out.writeUInt32LE(WAV_RATE, 28); // bytes per second
  out.writeUInt16LE(1, 32); // block align
  out.writeUInt16LE(8, 34); // bits per sample
  out.write('data', 36, 'ascii');
  out.writeUInt32LE(samples, 40);
  return out;
}

export function silentMp3(ms: number): Buffer {
  const frames = Math.max(1, Math.ceil(clamp(ms) / MP3_FRAME_MS));
  const out = Buffer.alloc(frames * MP3_FRAME_BYTES, 0);
  for (let i = 0; i < frames; i++) MP3_FRAME.copy(out, i * MP3_FRAME_BYTES);
  return out;
}
