/** GSM 03.38 default alphabet: one septet each. */
const GSM7_BASIC = new Set(
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà',
);
/** GSM 03.38 extension table: an escape plus the character, two septets each. */
const GSM7_EXTENSION = new Set('^{}\\[~]|€\f');

export type Encoding = 'GSM-7' | 'UCS-2';

export interface SegmentCount {
  encoding: Encoding;
  segments: number;
}

const LIMITS: Record<Encoding, { single: number; part: number }> = {
  'GSM-7': { single: 160, part: 153 },
  'UCS-2': { single: 70, part: 67 },
};

/**
 * How many SMS segments a text takes. GSM-7 when every character is in the default alphabet or
 * its extension (extension characters count two septets); otherwise UCS-2 counted in UTF-16 code
 * units. A multi-part message packs greedily and never splits an escape pair or a surrogate pair.
 */
export function countSegments(text: string): SegmentCount {
  const chars = Array.from(text); // code points
  const gsm = chars.every((c) => GSM7_BASIC.has(c) || GSM7_EXTENSION.has(c));
  const encoding: Encoding = gsm ? 'GSM-7' : 'UCS-2';
  const units = chars.map((c) => (gsm ? (GSM7_EXTENSION.has(c) ? 2 : 1) : c.length));
  const total = units.reduce((a, b) => a + b, 0);
  const { single, part } = LIMITS[encoding];
  if (total <= single) return { encoding, segments: 1 };
  let segments = 1;
  let used = 0;
  for (const u of units) {
    if (used + u > part) {
      segments++;
      used = 0;
    }
    used += u;
  }
  return { encoding, segments };
}
