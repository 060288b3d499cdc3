/**
 * RFC 3339 instants, the wire's only time format (Python: format_instant and
 * parse_instant in _envelope.py, the server's parse_rfc3339 in dispatcher/validation.py).
 *
 * Epoch values are milliseconds, floored (not truncated toward zero), so an
 * instant before 1970 with a sub-millisecond part lands on the earlier
 * millisecond, as every SDK computes it (sdk/vectors/envelope.json `instants`).
 * Seconds vs milliseconds: the text carries the unit, so a bare number such as
 * "1893553445" is refused rather than guessed at.
 */

// Same grammar as the server: 'T', 't' or ' ' between date and time, 1..9
// fraction digits, and an offset that is required (checked below, to say so).
const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))?$/;

/** An RFC 3339 instant taken apart, keeping the writer's own offset. */
export interface ParsedInstant {
  /** Unix epoch milliseconds, floored. */
  epochMs: number;
  /** The wall-clock fields as written. */
  year: number; month: number; day: number; hour: number; minute: number; second: number;
  /** The fraction as written, up to 9 digits ("" when none). */
  fraction: string;
  /** Offset from UTC in minutes (+08:00 is 480; Z is 0). */
  offsetMinutes: number;
}

/** Thrown for text that is not an RFC 3339 instant with an offset; the message fits after "field: ". */
export class InstantError extends Error {}

export function parseInstantParts(text: string): ParsedInstant {
  const m = RFC3339.exec(text);
  if (m === null) {
    throw new InstantError(`is not an RFC 3339 timestamp (like 2030-01-02T03:04:05.678Z), got ${JSON.stringify(text)}`);
  }
  const [, y, mo, d, h, mi, s, frac = '', zulu, sign, offH, offM] = m;
  if (zulu === undefined && sign === undefined) {
    throw new InstantError(`has no UTC offset; RFC 3339 requires 'Z' or ±hh:mm, got ${JSON.stringify(text)}`);
  }
  const year = Number(y), month = Number(mo), day = Number(d);
  const hour = Number(h), minute = Number(mi), second = Number(s);
  let offsetMinutes = 0;
  if (sign !== undefined) {
    const oh = Number(offH), om = Number(offM);
    if (oh > 23 || om > 59) throw new InstantError(`has an invalid UTC offset, got ${JSON.stringify(text)}`);
    offsetMinutes = (sign === '-' ? -1 : 1) * (oh * 60 + om);
  }
  // Date.UTC maps years 0..99 to 19xx; setUTCFullYear does not.
  const probe = new Date(0);
  probe.setUTCFullYear(year, month - 1, day);
  probe.setUTCHours(hour, minute, second, 0);
  if (
    probe.getUTCFullYear() !== year || probe.getUTCMonth() !== month - 1 || probe.getUTCDate() !== day ||
    probe.getUTCHours() !== hour || probe.getUTCMinutes() !== minute || probe.getUTCSeconds() !== second
  ) {
    throw new InstantError(`is not a valid date and time, got ${JSON.stringify(text)}`);
  }
  // The fraction is positive on top of a whole second, so flooring the instant
  // is dropping the fraction's digits past the millisecond.
  const millis = Number(frac.padEnd(3, '0').slice(0, 3));
  const epochMs = probe.getTime() - offsetMinutes * 60_000 + millis;
  return { epochMs, year, month, day, hour, minute, second, fraction: frac, offsetMinutes };
}

/** RFC 3339 text (from the server or a caller) -> unix epoch milliseconds, floored. */
export function parseInstant(text: string): number {
  return parseInstantParts(text).epochMs;
}

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

function formatOffset(minutes: number): string {
  const sign = minutes < 0 ? '-' : '+';
  const abs = Math.abs(minutes);
  return `${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}

/** Python's datetime.isoformat() of the same instant: fraction omitted when zero, else 6 digits. */
function isoformat(p: Omit<ParsedInstant, 'epochMs'>): string {
  const micros = p.fraction.padEnd(6, '0').slice(0, 6);
  const frac = /^0*$/.test(micros) ? '' : `.${micros}`;
  return `${pad(p.year, 4)}-${pad(p.month)}-${pad(p.day)}T${pad(p.hour)}:${pad(p.minute)}:${pad(p.second)}${frac}` +
    formatOffset(p.offsetMinutes);
}

/**
 * The schedule_time text for a caller's instant, as the Python SDK's
 * format_instant writes it: RFC 3339 keeping the caller's own offset (UTC as
 * +00:00), fraction omitted when zero, else exactly 6 digits. A Date carries no
 * offset, so it is written in UTC. Throws InstantError for a string without an
 * offset (a local time would be guessed at) and RangeError for an invalid Date.
 */
export function formatInstant(value: Date | string): string {
  if (typeof value === 'string') {
    return isoformat(parseInstantParts(value));
  }
  const ms = value.getTime();
  if (!Number.isFinite(ms)) throw new RangeError('is an invalid Date');
  const millis = ((ms % 1000) + 1000) % 1000;
  return isoformat({
    year: value.getUTCFullYear(), month: value.getUTCMonth() + 1, day: value.getUTCDate(),
    hour: value.getUTCHours(), minute: value.getUTCMinutes(), second: value.getUTCSeconds(),
    fraction: pad(millis, 3), offsetMinutes: 0,
  });
}
