/** Admin sessions in the document database (backs the express-session store). */
export interface StoredSession {
  sid: string;
  /** JSON of the express-session data. */
  data: string;
  expiresAt: Date;
}

export abstract class SessionRepository {
  /** null when missing or expired. */
  abstract get(sid: string): Promise<StoredSession | null>;
  abstract set(session: StoredSession): Promise<void>;
  abstract destroy(sid: string): Promise<void>;
  /** Live sessions (used to carry them over when the document database changes). */
  abstract all(): Promise<StoredSession[]>;
}
