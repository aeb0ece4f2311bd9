export const addMs = (at: Date, ms: number): Date => new Date(at.getTime() + ms);
export const iso = (at: Date): string => at.toISOString();
export const ageMs = (now: Date, then: string | undefined): number => (then === undefined ? Number.POSITIVE_INFINITY : now.getTime() - Date.parse(then));
/** `yyyy-mm-dd` of an instant, in UTC: the key of the events-by-day index. */
export const utcDay = (at: string | Date): string => new Date(at).toISOString().slice(0, 10);
