// How settings are read from the environment's strings, shared by every settings class
// (AppConfig and the classes it extends).

/** A number ('' and unset: undefined); IsInt or IsNumber beside it says which numbers a setting takes. */
export const toNumber = ({ value }: { value: unknown }) => (value === undefined || value === '' ? undefined : Number(value));
export const toInt = toNumber;
/** 'true' / 'false'; anything else is left as it is, for IsBoolean to refuse by name. */
export const toBoolean = ({ value }: { value: unknown }) => (value === 'true' ? true : value === 'false' ? false : value === '' ? undefined : value);
export const URL_RE = /^[a-z][a-z0-9+.-]*:\/\/.+/i;
export const SCHEDULE_RE = /^\d+(,\d+)*$/;
