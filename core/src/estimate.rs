//! The token estimate that decides offloading (spec: "tokens ~ characters / 4", CJK-aware).
//!
//! `estimate = ceil(other / 4) + cjk`, counting Unicode scalar values: a CJK, Hiragana, Katakana
//! or Hangul character is about one token, everything else about a quarter of one.

/// Character counts of a text, kept apart so estimates of concatenations can be added up
/// without re-reading the text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Characters outside the CJK blocks.
    pub other: u64,
    /// Characters in the CJK, Hiragana, Katakana and Hangul blocks.
    pub cjk: u64,
}

impl Counts {
    /// Counts the characters of `text`.
    pub fn of(text: &str) -> Self {
        // ASCII is never CJK and every CJK scalar is 3 or 4 bytes in UTF-8, so a byte-level pass
        // over ASCII-only text is exact and avoids decoding.
        if crate::json_text::is_ascii(text.as_bytes()) {
            return Counts {
                other: text.len() as u64,
                cjk: 0,
            };
        }
        let mut counts = Counts::default();
        for c in text.chars() {
            if is_cjk(c) {
                counts.cjk += 1;
            } else {
                counts.other += 1;
            }
        }
        counts
    }

    /// The estimated tokens: `ceil(other / 4) + cjk`, saturating at `u32::MAX`.
    pub fn tokens(self) -> u32 {
        let tokens = self.other.div_ceil(4) + self.cjk;
        u32::try_from(tokens).unwrap_or(u32::MAX)
    }
}

impl std::ops::Add for Counts {
    type Output = Counts;

    /// The counts of the concatenation of two texts.
    fn add(self, other: Counts) -> Counts {
        Counts {
            other: self.other + other.other,
            cjk: self.cjk + other.cjk,
        }
    }
}

/// The estimated tokens of `text`.
pub fn estimate(text: &str) -> u32 {
    Counts::of(text).tokens()
}

/// True for characters of the CJK, Hiragana, Katakana and Hangul Unicode blocks.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x11FF     // Hangul Jamo
        | 0x2E80..=0x2FDF   // CJK Radicals Supplement, Kangxi Radicals
        | 0x3000..=0x303F   // CJK Symbols and Punctuation
        | 0x3040..=0x309F   // Hiragana
        | 0x30A0..=0x30FF   // Katakana
        | 0x3130..=0x318F   // Hangul Compatibility Jamo
        | 0x31C0..=0x31FF   // CJK Strokes, Katakana Phonetic Extensions
        | 0x3200..=0x33FF   // Enclosed CJK Letters and Months, CJK Compatibility
        | 0x3400..=0x4DBF   // CJK Unified Ideographs Extension A
        | 0x4E00..=0x9FFF   // CJK Unified Ideographs
        | 0xA960..=0xA97F   // Hangul Jamo Extended-A
        | 0xAC00..=0xD7AF   // Hangul Syllables
        | 0xD7B0..=0xD7FF   // Hangul Jamo Extended-B
        | 0xF900..=0xFAFF   // CJK Compatibility Ideographs
        | 0xFE30..=0xFE4F   // CJK Compatibility Forms
        | 0x20000..=0x323AF // CJK Extensions B to H, Compatibility Ideographs Supplement
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latin_text_is_a_quarter_rounded_up() {
        assert_eq!(estimate(""), 0);
        assert_eq!(estimate("a"), 1);
        assert_eq!(estimate("abcd"), 1);
        assert_eq!(estimate("abcde"), 2);
        assert_eq!(estimate(&"x".repeat(6400)), 1600);
        // Accented Latin letters are one character each, not one per UTF-8 byte.
        assert_eq!(estimate("éééé"), 1);
    }

    #[test]
    fn cjk_characters_are_one_token_each() {
        assert_eq!(estimate("記憶"), 2);
        assert_eq!(estimate("ひらがな"), 4);
        assert_eq!(estimate("カタカナ"), 4);
        assert_eq!(estimate("한국어"), 3);
        // Mixed: 4 Latin characters make one token, 3 ideographs three.
        assert_eq!(estimate("abcd漢字文"), 4);
        assert_eq!(estimate("a漢"), 2);
        // Ideographs beyond the BMP (Extension B).
        assert_eq!(estimate("𠀀"), 1);
    }

    #[test]
    fn counts_add_up_like_the_concatenation() {
        let a = "some text 漢字";
        let b = "한국 more";
        assert_eq!(Counts::of(a) + Counts::of(b), Counts::of(&format!("{a}{b}")));
    }
}
