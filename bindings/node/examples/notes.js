// Deterministic sample data for the MCP example: the same arguments give the same notes, byte
// for byte, so the test can compute what an extraction must return.
const TOPICS = ['cache', 'deploy', 'schema', 'latency', 'billing', 'search', 'backup', 'queue'];
const OWNERS = ['ana', 'bo', 'chen', 'dara', 'eli'];

/** `count` notes matching `query` (a topic word; empty matches all). */
export function searchNotes(query = '', count = 300) {
  const notes = [];
  for (let i = 0; notes.length < count && i < count * TOPICS.length; i++) {
    const topic = TOPICS[i % TOPICS.length];
    if (query && !topic.includes(query)) continue;
    notes.push({
      id: `note-${i + 1}`,
      title: `${topic} note ${i + 1}`,
      topic,
      owner: OWNERS[(i * 3) % OWNERS.length],
      priority: 1 + ((i * 7) % 5),
      created: new Date(Date.UTC(2026, 0, 1) + i * 3_600_000).toISOString(),
      body: `Decision ${i + 1} about ${topic}: keep the ${topic} path simple, measure before changing it, `
        + `and write down why. Reviewed by ${OWNERS[i % OWNERS.length]}.`,
    });
  }
  return notes;
}

/** One note by id, or null. */
export function getNote(id) {
  const n = Number(/^note-(\d+)$/.exec(id ?? '')?.[1]);
  return n >= 1 ? searchNotes('', n).at(-1) : null;
}

const TYPES = ['semantic', 'episodic', 'procedural'];

/**
 * The notes matching `query` as memory records (the shape `recall_memories` returns: ranked hits
 * `{memory, score}`), so that the component offloads them with the memory recipes. `light`
 * detail leaves out `content`, as a memory service does.
 */
export function recallMemories(query = '', detail = 'light', count = 120) {
  return searchNotes(query, count).map((note, i) => {
    const memory_type = TYPES[i % TYPES.length];
    const memory = {
      id: note.id,
      memory_type,
      namespace: `_${memory_type}/${note.topic}`,
      title: note.title,
      tags: [note.topic, note.owner],
      created: note.created,
      status: 'active',
    };
    if (detail !== 'light') memory.content = note.body;
    return { memory, score: Number((1 - i / (count * 2)).toFixed(4)) };
  });
}
