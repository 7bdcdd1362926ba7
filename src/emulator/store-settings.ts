/**
 * The emulator's `counters` (what the API and the runs counted, read by the control routes) and
 * `settings` (the faults and the variants a control route sets), the settings kept parsed in memory.
 */
import { EmulatorFaults } from "./faults";
import { EmulatorVariants } from "./variants";

/** Freezes a parsed setting all the way down: a caller that changed a shared one would change it for every later reader. */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

export class SettingsStore {
  /**
   * The settings (faults, variants) as last read or written, parsed and frozen: the runner reads the
   * faults for every frame it sends. This store is the object's only writer of them, so a write
   * (or a reset) here is the only thing that changes them.
   */
  private readonly settings = new Map<string, unknown>();

  constructor(private readonly sql: Pick<SqlStorage, "exec">) {}

  /** Forgets the settings held in memory (the tables were emptied). */
  clear(): void {
    this.settings.clear();
  }

  count(name: string, by = 1): void {
    this.sql.exec(
      "INSERT INTO counters (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = value + excluded.value",
      name,
      by,
    );
  }

  counters(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const row of this.sql.exec<{ name: string; value: number }>("SELECT name, value FROM counters"))
      out[row.name] = row.value;
    return out;
  }

  private setting(name: string): unknown {
    const row = this.sql.exec<{ value: string }>("SELECT value FROM settings WHERE name = ?", name).toArray()[0];
    return row ? JSON.parse(row.value) : undefined;
  }

  private setSetting(name: string, value: unknown): void {
    this.settings.delete(name);
    this.sql.exec(
      "INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value",
      name,
      JSON.stringify(value),
    );
  }

  /** A setting parsed by `parse`, read from SQLite once and kept (frozen) until it is written. */
  private parsedSetting<T>(name: string, parse: (value: unknown) => T): T {
    if (this.settings.has(name)) return this.settings.get(name) as T;
    const value = this.setting(name);
    const parsed = deepFreeze(value === undefined ? ({} as T) : parse(value));
    this.settings.set(name, parsed);
    return parsed;
  }

  faults(): EmulatorFaults {
    return this.parsedSetting("faults", (v) => EmulatorFaults.parse(v));
  }

  setFaults(faults: EmulatorFaults): void {
    this.setSetting("faults", faults);
  }

  variants(): EmulatorVariants {
    return this.parsedSetting("variants", (v) => EmulatorVariants.parse(v));
  }

  setVariants(variants: EmulatorVariants): void {
    this.setSetting("variants", variants);
  }
}
