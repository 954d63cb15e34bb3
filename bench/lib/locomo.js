'use strict';
/**
 * Reading LoCoMo (`locomo-dev.json`) the one way every bench script uses: a conversation's turns in
 * order as the memories an agent would write, and a question's evidence as known turn ids.
 */

/** "1:56 pm on 8 May, 2023" (LoCoMo's session dates, read as UTC) plus `i` half minutes: the turn's time; null when unreadable. */
function sessionTime(date, i) {
  const m = /(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})/i.exec(String(date));
  if (!m) return null;
  const month = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'].indexOf(m[5].slice(0, 3).toLowerCase());
  const hour = (Number(m[1]) % 12) + (m[3].toLowerCase() === 'pm' ? 12 : 0);
  return month < 0 ? null : new Date(Date.UTC(Number(m[6]), month, Number(m[4]), hour, Number(m[2])) + i * 30_000);
}

/**
 * A sample's turns in order: `dia_id`, `session` (number), `date` (the session's text), `at` (its
 * time plus the turn's index in half minutes, or null), `speaker`, `text`, `caption`, and the memory
 * we store for it: `title` ("<date> — <speaker>") and `content` ("<speaker>: <text> [image: <caption>]").
 */
function turnsOf(sample) {
  const c = sample.conversation;
  const turns = [];
  for (let n = 1; c[`session_${n}`] !== undefined || c[`session_${n + 1}`] !== undefined; n++) {
    const session = c[`session_${n}`];
    if (!Array.isArray(session)) continue;
    const date = c[`session_${n}_date_time`] ?? `session ${n}`;
    session.forEach((t, i) => {
      const content = `${t.speaker}: ${t.text}${t.blip_caption ? ` [image: ${t.blip_caption}]` : ''}`;
      turns.push({ dia_id: t.dia_id, session: n, date, at: sessionTime(date, i), speaker: t.speaker, text: t.text, caption: t.blip_caption, title: `${date} — ${t.speaker}`, content });
    });
  }
  return turns;
}

/** A question's evidence ("D1:3", "D:1:3", "D1:03; D2:1") as the known turn ids it names, each once. */
function normaliseEvidence(ev, known) {
  const out = new Set();
  for (const raw of ev) {
    for (let id of String(raw).split(/[;,]/)) {
      id = id.trim().replace(/^D:/, 'D');
      const m = /^D(\d+):0*(\d+)$/.exec(id);
      if (!m) continue;
      id = `D${m[1]}:${m[2]}`;
      if (known.has(id)) out.add(id);
    }
  }
  return [...out];
}

module.exports = { turnsOf, normaliseEvidence, sessionTime };
