//! Byte searches sixteen bytes a step, for the scanners of JSON text: SSE2 in machine code,
//! WebAssembly SIMD in the component.
//!
//! The component is built without a `simd128` flag (each function here enables it with
//! `target_feature`, and a caller that wants one inlined enables it too), so the standard
//! library's and `memchr`'s searches run there a 32-bit word at a time. A profile of a `select`
//! recipe at 50,000 records put the line split (`str::lines`), the output's ASCII check and
//! the string skips at 3.5-7x their machine-code time in the component (docs/BENCH-NOTES.md).

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The index of the first `"` or `\\` at or after `from`: where a string's body is interrupted.
/// A SIMD search: `memchr` has none for WebAssembly in a build without `simd128`.
#[cfg_attr(target_arch = "wasm32", target_feature(enable = "simd128"))]
pub fn quote_or_backslash(b: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    loop {
        i = plain_run(b, i, false);
        match *b.get(i)? {
            b'"' | b'\\' => return Some(i),
            _ => i += 1,
        }
    }
}

/// The index of the first byte at or after `i` that a string's scan must look at: a quote, a
/// backslash, a control character (below 0x20, or DEL, which jq escapes), or when `ascii` a byte
/// of a non-ASCII character; at the end,
/// any index of the last few bytes (the caller looks at those one by one).
#[cfg_attr(target_arch = "wasm32", target_feature(enable = "simd128"))]
pub(super) fn plain_run(b: &[u8], i: usize, ascii: bool) -> usize {
    let i = vector_run(b, i, ascii);
    word_run(b, i, ascii)
}

/// [`plain_run`] eight bytes a step.
#[cfg_attr(target_arch = "wasm32", target_feature(enable = "simd128"))]
fn word_run(b: &[u8], mut i: usize, ascii: bool) -> usize {
    while let Some(chunk) = b.get(i..i + 8) {
        let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let stops = zero_bytes(word ^ (ONES * u64::from(b'"')))
            | zero_bytes(word ^ (ONES * u64::from(b'\\')))
            | (word.wrapping_sub(ONES * 0x20) & !word & HIGH)
            | zero_bytes(word ^ (ONES * 0x7f))
            | if ascii { word & HIGH } else { 0 };
        if stops != 0 {
            // The lowest flagged byte is a true one (borrows only flag bytes above it).
            return i + (stops.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i
}

/// The high bit of every byte of `word` that is zero (and of some bytes above one that is).
fn zero_bytes(word: u64) -> u64 {
    word.wrapping_sub(ONES) & !word & HIGH
}

/// [`plain_run`] sixteen bytes a step with SSE2, which every x86-64 processor has.
#[cfg(target_arch = "x86_64")]
fn vector_run(b: &[u8], i: usize, ascii: bool) -> usize {
    #[target_feature(enable = "sse2")]
    fn run(b: &[u8], mut i: usize, ascii: bool) -> usize {
        use std::arch::x86_64::*;
        let quote = _mm_set1_epi8(b'"' as i8);
        let backslash = _mm_set1_epi8(b'\\' as i8);
        let below_space = _mm_set1_epi8(0x1f);
        let del = _mm_set1_epi8(0x7f);
        let zero = _mm_setzero_si128();
        while let Some(chunk) = b.get(i..i + 16) {
            // SAFETY: `chunk` is 16 readable bytes; the load has no alignment requirement.
            #[allow(unsafe_code, reason = "an unaligned load of a checked 16-byte slice")]
            let v = unsafe { _mm_loadu_si128(chunk.as_ptr().cast()) };
            let mut stops = _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash));
            // Unsigned v <= 0x1f: the smaller of the two is v itself.
            stops = _mm_or_si128(stops, _mm_cmpeq_epi8(_mm_min_epu8(v, below_space), v));
            stops = _mm_or_si128(stops, _mm_cmpeq_epi8(v, del));
            if ascii {
                stops = _mm_or_si128(stops, _mm_cmplt_epi8(v, zero));
            }
            let mask = _mm_movemask_epi8(stops);
            if mask != 0 {
                return i + mask.trailing_zeros() as usize;
            }
            i += 16;
        }
        i
    }
    // SAFETY: SSE2 is part of the x86-64 baseline, so every processor this runs on has it.
    #[allow(unsafe_code, reason = "calling a function that needs SSE2, which x86-64 always has")]
    unsafe {
        run(b, i, ascii)
    }
}

/// [`plain_run`] sixteen bytes a step with WebAssembly's SIMD, which every runtime lro runs on
/// (wasmtime, V8) enables by default.
#[cfg(target_arch = "wasm32")]
fn vector_run(b: &[u8], i: usize, ascii: bool) -> usize {
    #[target_feature(enable = "simd128")]
    fn run(b: &[u8], mut i: usize, ascii: bool) -> usize {
        use std::arch::wasm32::*;
        let quote = u8x16_splat(b'"');
        let backslash = u8x16_splat(b'\\');
        let space = u8x16_splat(0x20);
        let del = u8x16_splat(0x7f);
        let high = u8x16_splat(0x80);
        while let Some(chunk) = b.get(i..i + 16) {
            // SAFETY: `chunk` is 16 readable bytes; v128.load has no alignment requirement.
            #[allow(unsafe_code, reason = "an unaligned load of a checked 16-byte slice")]
            let v = unsafe { v128_load(chunk.as_ptr().cast()) };
            let mut stops = v128_or(v128_or(u8x16_eq(v, quote), u8x16_eq(v, backslash)), u8x16_lt(v, space));
            stops = v128_or(stops, u8x16_eq(v, del));
            if ascii {
                stops = v128_or(stops, u8x16_ge(v, high));
            }
            if v128_any_true(stops) {
                return i + u8x16_bitmask(stops).trailing_zeros() as usize;
            }
            i += 16;
        }
        i
    }
    run(b, i, ascii)
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "wasm32")))]
fn vector_run(_: &[u8], i: usize, _: bool) -> usize {
    i
}

/// The index of the first `\n` at or after `from`.
#[cfg_attr(target_arch = "wasm32", target_feature(enable = "simd128"))]
pub fn newline(b: &[u8], from: usize) -> Option<usize> {
    #[cfg(target_arch = "wasm32")]
    {
        use std::arch::wasm32::*;
        let mut i = from;
        let nl = u8x16_splat(b'\n');
        while let Some(chunk) = b.get(i..i + 16) {
            // SAFETY: `chunk` is 16 readable bytes; v128.load has no alignment requirement.
            #[allow(unsafe_code, reason = "an unaligned load of a checked 16-byte slice")]
            let v = unsafe { v128_load(chunk.as_ptr().cast()) };
            let found = u8x16_eq(v, nl);
            if v128_any_true(found) {
                return Some(i + u8x16_bitmask(found).trailing_zeros() as usize);
            }
            i += 16;
        }
        b.get(i..)?.iter().position(|&c| c == b'\n').map(|at| i + at)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        memchr::memchr(b'\n', b.get(from..)?).map(|at| from + at)
    }
}

/// Whether every byte of `b` is ASCII.
#[cfg_attr(target_arch = "wasm32", target_feature(enable = "simd128"))]
pub fn is_ascii(b: &[u8]) -> bool {
    #[cfg(target_arch = "wasm32")]
    {
        use std::arch::wasm32::*;
        let mut chunks = b.chunks_exact(16);
        let mut high = u8x16_splat(0);
        for chunk in &mut chunks {
            // SAFETY: `chunk` is 16 readable bytes; v128.load has no alignment requirement.
            #[allow(unsafe_code, reason = "an unaligned load of a 16-byte chunk")]
            let v = unsafe { v128_load(chunk.as_ptr().cast()) };
            high = v128_or(high, v);
        }
        u8x16_bitmask(high) == 0 && chunks.remainder().is_ascii()
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        b.is_ascii()
    }
}

/// The lines of `text` as [`str::lines`] gives them (split at `\n`, a `\r` before it dropped, no
/// empty line after a final `\n`), found with [`newline`].
pub fn lines(text: &str) -> impl Iterator<Item = &str> {
    let mut at = 0;
    std::iter::from_fn(move || {
        if at >= text.len() {
            return None;
        }
        let end = newline(text.as_bytes(), at).unwrap_or(text.len());
        // `\n` is ASCII, so `at` and `end` are character boundaries.
        let line = &text[at..end];
        at = end + 1;
        Some(line.strip_suffix('\r').unwrap_or(line))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_those_of_str_lines() {
        let long = format!("{}\n{}\r\n\n", "a".repeat(40), "é".repeat(20));
        for text in [
            "",
            "\n",
            "a",
            "a\n",
            "a\r\nb",
            "a\n\nb\n",
            "\r\n\r\n",
            "a\rb\n",
            long.as_str(),
        ] {
            assert_eq!(
                lines(text).collect::<Vec<_>>(),
                text.lines().collect::<Vec<_>>(),
                "{text:?}"
            );
        }
        let text: String = (0..100).map(|n| format!("{}\n", "x".repeat(n))).collect();
        assert_eq!(lines(&text).collect::<Vec<_>>(), text.lines().collect::<Vec<_>>());
    }

    #[test]
    fn ascii_is_found_in_every_position() {
        for len in 0..40 {
            let mut b = vec![b'a'; len];
            assert!(is_ascii(&b));
            for at in 0..len {
                b[at] = 0x80;
                assert!(!is_ascii(&b), "{len} {at}");
                b[at] = b'a';
            }
        }
    }

    #[test]
    fn plain_runs_stop_at_every_byte_a_string_scan_looks_at() {
        for stop in [b'"', b'\\', 0x00, 0x1f, 0x7f] {
            for len in 0..40 {
                let mut b = vec![b'a'; len + 1];
                b[len] = stop;
                let at = plain_run(&b, 0, false);
                assert!(at <= len && b[at..len].iter().all(|&c| c == b'a'), "{stop} {len} {at}");
                assert!(at == len || len - at < 8, "{stop} {len} {at}: stopped early");
            }
        }
    }
}
