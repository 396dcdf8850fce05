//! [`Valid`]: JSON text checked as every reader takes it, without a value.

/// JSON text that every JSON reader takes: parsed with [`parse`], strings decoded and numbers
/// read, without building a value. Unlike `serde::de::IgnoredAny`, which skips over them, it
/// refuses what no JSON value can hold, a lone UTF-16 surrogate escape (`"\ud800"`) or a number
/// out of range (`1e400`), so text copied as it is into a file is text `lro_extract` reads back.
pub struct Valid;

impl<'de> serde::Deserialize<'de> for Valid {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Valid)
    }
}

impl<'de> serde::de::Visitor<'de> for Valid {
    type Value = Valid;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Valid, E> {
        Ok(Valid)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Valid, E> {
        Ok(Valid)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Valid, E> {
        Ok(Valid)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Valid, E> {
        Ok(Valid)
    }
    fn visit_str<E>(self, _: &str) -> Result<Valid, E> {
        Ok(Valid)
    }
    fn visit_unit<E>(self) -> Result<Valid, E> {
        Ok(Valid)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Valid, A::Error> {
        while seq.next_element::<Valid>()?.is_some() {}
        Ok(Valid)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Valid, A::Error> {
        while map.next_entry::<Valid, Valid>()?.is_some() {}
        Ok(Valid)
    }
}
