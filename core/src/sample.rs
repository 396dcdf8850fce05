//! A deterministic generator of MIF memory records at each detail level, for demos, tests and
//! benchmarks. The same (detail, count, seed) always gives the same bytes.

use serde_json::{Value, json};

use crate::Detail;
use crate::time::format_rfc3339_ms;

/// splitmix64: tiny, fast, and the same on every platform.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Namespaces with weights, so counts by namespace are uneven (as real stores are).
const NAMESPACES: [(&str, usize); 8] = [
    ("_semantic/decisions", 6),
    ("_semantic/knowledge", 5),
    ("_episodic/incidents", 4),
    ("_procedural/runbooks", 3),
    ("_episodic/sessions", 3),
    ("_semantic/entities", 2),
    ("_procedural/patterns", 2),
    ("_episodic/blockers", 1),
];
const TOPICS: [&str; 12] = [
    "cache", "retry", "schema", "index", "deploy", "auth", "queue", "billing", "search", "backup", "latency", "quota",
];
const ASPECTS: [&str; 8] = [
    "policy",
    "failure",
    "migration",
    "design",
    "review",
    "limits",
    "rollout",
    "cleanup",
];
const PRODUCTS: [&str; 6] = ["Atlas", "Beacon", "Cobalt", "Delta", "Ember", "Fjord"];
const TAGS: [&str; 10] = [
    "architecture",
    "ops",
    "security",
    "performance",
    "api",
    "data",
    "frontend",
    "infra",
    "TAG",
    "review",
];
const VERBS: [&str; 6] = ["decided", "observed", "measured", "agreed", "documented", "found"];
const STATUSES: [&str; 3] = ["active", "active", "archived"];
const AGENTS: [&str; 3] = ["claude", "planner", "reviewer"];

/// Midnight 2025-01-01 UTC.
const EPOCH_MS: u64 = 1_735_689_600_000;

/// `count` records at `detail`. With `hits`, each is wrapped as `{"memory": ..., "score": s}`
/// with scores falling in rank order.
pub fn records(detail: Detail, count: usize, seed: u64, hits: bool) -> Vec<Value> {
    let mut rng = Rng(seed ^ 0x4C52_4F5F_5345_4544);
    (0..count)
        .map(|i| {
            let memory = record(&mut rng, detail, i);
            if hits {
                let score = 0.99 - 0.9 * i as f64 / count.max(1) as f64;
                json!({"memory": memory, "score": (score * 10_000.0).round() / 10_000.0})
            } else {
                memory
            }
        })
        .collect()
}

fn record(rng: &mut Rng, detail: Detail, i: usize) -> Value {
    let total: usize = NAMESPACES.iter().map(|(_, w)| w).sum();
    let mut roll = rng.below(total);
    let namespace = NAMESPACES
        .iter()
        .find(|(_, w)| {
            if roll < *w {
                return true;
            }
            roll -= w;
            false
        })
        .map_or(NAMESPACES[0].0, |(ns, _)| ns);
    let memory_type = namespace
        .trim_start_matches('_')
        .split('/')
        .next()
        .unwrap_or("semantic");
    let (topic, aspect, product) = (rng.pick(&TOPICS), rng.pick(&ASPECTS), rng.pick(&PRODUCTS));
    let id = format!(
        "{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}",
        rng.next() as u32,
        rng.next() as u16,
        rng.next() & 0xfff,
        rng.next() & 0xfff,
        rng.next() & 0xffff_ffff_ffff
    );
    let created_ms = EPOCH_MS + (i as u64) * 3_600_000 + (rng.next() % 3_600) * 1000;
    let created = format_rfc3339_ms(created_ms).replace(".000", "");
    let tags: Vec<&str> = (0..rng.below(4)).map(|_| rng.pick(&TAGS)).collect();
    let mut m = serde_json::Map::new();
    m.insert("id".into(), json!(id));
    m.insert("memory_type".into(), json!(memory_type));
    m.insert("namespace".into(), json!(namespace));
    m.insert("title".into(), json!(format!("{product} {topic} {aspect} #{i}")));
    m.insert("tags".into(), json!(tags));
    m.insert("created".into(), json!(created));
    if rng.below(3) == 0 {
        let modified = format_rfc3339_ms(created_ms + rng.next() % 86_400_000).replace(".000", "");
        m.insert("modified".into(), json!(modified));
    }
    m.insert("status".into(), json!(rng.pick(&STATUSES)));
    if detail == Detail::Light {
        return Value::Object(m);
    }
    let priority = 1 + rng.below(5);
    let content = format!(
        "We {} that the {topic} {aspect} for {product} needs attention at priority {priority}. \
         Follow-up owner: {}; see the {topic} runbook.",
        rng.pick(&VERBS),
        rng.pick(&AGENTS)
    );
    let confidence = (rng.unit() * 100.0).round() / 100.0;
    m.insert("content".into(), json!(content));
    m.insert("summary".into(), json!(format!("{product} {topic} {aspect}")));
    if detail == Detail::Medium {
        m.insert("confidence".into(), json!(confidence));
        return Value::Object(m);
    }
    m.insert("entities".into(), json!([{"name": product, "type": "product"}]));
    m.insert("relationships".into(), json!([]));
    m.insert("wiki_links".into(), json!([format!("{topic}-{aspect}")]));
    m.insert("embedding".into(), json!({}));
    m.insert(
        "provenance".into(),
        json!({"source_type": "conversation", "source_ref": format!("session-{}", i % 37), "agent": rng.pick(&AGENTS), "confidence": confidence, "trust_level": "verified"}),
    );
    m.insert(
        "temporal".into(),
        json!({"recorded_at": created, "access_count": rng.below(20)}),
    );
    m.insert("citations".into(), json!([]));
    m.insert("blocks".into(), json!({}));
    m.insert("extensions".into(), json!({"priority": priority}));
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_deterministic_and_level_shaped() {
        assert_eq!(records(Detail::Full, 20, 7, false), records(Detail::Full, 20, 7, false));
        assert_ne!(records(Detail::Full, 20, 7, false), records(Detail::Full, 20, 8, false));
        let light = &records(Detail::Light, 1, 1, false)[0];
        assert!(light.get("content").is_none() && light.get("title").is_some());
        let medium = &records(Detail::Medium, 1, 1, false)[0];
        assert!(medium["confidence"].is_number() && medium["content"].is_string());
        let full = &records(Detail::Full, 1, 1, false)[0];
        assert!(full.get("confidence").is_none() && full["provenance"]["confidence"].is_number());
        let hit = &records(Detail::Light, 3, 1, true)[2];
        assert!(hit["memory"]["id"].is_string() && hit["score"].is_number());
    }

    #[test]
    fn full_records_are_about_600_bytes() {
        let all = records(Detail::Full, 500, 1, false);
        let avg = all.iter().map(|r| r.to_string().len()).sum::<usize>() / all.len();
        assert!((500..=900).contains(&avg), "average {avg} bytes");
    }
}
