//! How fast a simdjson-style structural pass could make lro's offload, measured rather than
//! guessed: the least work such a pass must do, run natively and in a WebAssembly component.
//!
//! Stage 1 classifies the input 64 bytes a step into bitmaps (quotes, backslashes, structural
//! characters, whitespace, control characters, UTF-8 continuation bytes), finds which bytes are
//! inside strings with a prefix xor of the unescaped quotes, and writes the positions of the
//! structural characters outside strings and of every quote. The stand-in for stage 2 walks
//! those positions keeping the nesting depth and counting strings and top-level member names:
//! a real second stage does all that and more (member-name matching, numbers, literals,
//! escapes, character counts, the list of records), so the figures are upper bounds.
//!
//! ```sh
//! cd tools/structural-bound
//! cargo run --release -- FILE                          # machine code (SSE2, the x86-64 baseline)
//! cargo build --release --target wasm32-wasip2
//! cd ../.. && cargo run --release -p lro-host --example run_command -- \
//!     tools/structural-bound/target/wasm32-wasip2/release/structural-bound.wasm FILE
//! ```
//!
//! FILE: a JSON array of records, such as `lro sample --count 50000 > records.json`.

use std::time::Instant;

/// One 64-byte block's bitmaps: bit `i` is byte `i` of the block.
#[derive(Default)]
struct Block {
    quotes: u64,
    backslashes: u64,
    structurals: u64,
    whitespace: u64,
    controls: u64,
    continuations: u64,
}

#[cfg(target_arch = "wasm32")]
mod arch {
    use std::arch::wasm32::*;

    /// The bitmaps of the 64 bytes at `b[i..]`, 16 bytes a step.
    #[target_feature(enable = "simd128")]
    pub fn classify(b: &[u8], i: usize) -> super::Block {
        let chunk = &b[i..i + 64];
        let mut out = super::Block::default();
        for k in 0..4 {
            // SAFETY: `chunk` has 64 readable bytes; v128.load has no alignment requirement.
            #[allow(unsafe_code)]
            let v = unsafe { v128_load(chunk.as_ptr().add(16 * k).cast()) };
            // `[` | 0x20 is `{` and `]` | 0x20 is `}`: one compare finds both brackets.
            let folded = v128_or(v, u8x16_splat(0x20));
            let structural = v128_or(
                v128_or(u8x16_eq(v, u8x16_splat(b':')), u8x16_eq(v, u8x16_splat(b','))),
                v128_or(u8x16_eq(folded, u8x16_splat(b'{')), u8x16_eq(folded, u8x16_splat(b'}'))),
            );
            let space = v128_or(
                v128_or(u8x16_eq(v, u8x16_splat(b' ')), u8x16_eq(v, u8x16_splat(b'\n'))),
                v128_or(u8x16_eq(v, u8x16_splat(b'\t')), u8x16_eq(v, u8x16_splat(b'\r'))),
            );
            let continuation = u8x16_eq(v128_and(v, u8x16_splat(0xc0)), u8x16_splat(0x80));
            let shift = 16 * k as u32;
            out.quotes |= u64::from(u8x16_bitmask(u8x16_eq(v, u8x16_splat(b'"')))) << shift;
            out.backslashes |= u64::from(u8x16_bitmask(u8x16_eq(v, u8x16_splat(b'\\')))) << shift;
            out.structurals |= u64::from(u8x16_bitmask(structural)) << shift;
            out.whitespace |= u64::from(u8x16_bitmask(space)) << shift;
            out.controls |= u64::from(u8x16_bitmask(u8x16_lt(v, u8x16_splat(0x20)))) << shift;
            out.continuations |= u64::from(u8x16_bitmask(continuation)) << shift;
        }
        out
    }
}

#[cfg(target_arch = "x86_64")]
mod arch {
    use std::arch::x86_64::*;

    /// The bitmaps of the 64 bytes at `b[i..]`, 16 bytes a step.
    #[target_feature(enable = "sse2")]
    pub fn classify(b: &[u8], i: usize) -> super::Block {
        let chunk = &b[i..i + 64];
        let mut out = super::Block::default();
        let mask = |m: __m128i, k: usize| (_mm_movemask_epi8(m) as u32 as u64) << (16 * k);
        for k in 0..4 {
            // SAFETY: `chunk` has 64 readable bytes; the load has no alignment requirement.
            #[allow(unsafe_code)]
            let v = unsafe { _mm_loadu_si128(chunk.as_ptr().add(16 * k).cast()) };
            let eq = |c: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8));
            let folded = _mm_or_si128(v, _mm_set1_epi8(0x20));
            let structural = _mm_or_si128(
                _mm_or_si128(eq(b':'), eq(b',')),
                _mm_or_si128(
                    _mm_cmpeq_epi8(folded, _mm_set1_epi8(b'{' as i8)),
                    _mm_cmpeq_epi8(folded, _mm_set1_epi8(b'}' as i8)),
                ),
            );
            let space = _mm_or_si128(_mm_or_si128(eq(b' '), eq(b'\n')), _mm_or_si128(eq(b'\t'), eq(b'\r')));
            // Unsigned v <= 0x1f: the smaller of v and 0x1f is v itself.
            let control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
            let continuation = _mm_cmpeq_epi8(
                _mm_and_si128(v, _mm_set1_epi8(0xc0u8 as i8)),
                _mm_set1_epi8(0x80u8 as i8),
            );
            out.quotes |= mask(eq(b'"'), k);
            out.backslashes |= mask(eq(b'\\'), k);
            out.structurals |= mask(structural, k);
            out.whitespace |= mask(space, k);
            out.controls |= mask(control, k);
            out.continuations |= mask(continuation, k);
        }
        out
    }
}

/// What stage 1 found besides the positions: a real pass needs each of these.
#[derive(Debug, Default)]
struct Totals {
    /// Whitespace outside strings (an element holding any is not compact).
    whitespace: u64,
    /// Control characters inside strings (invalid JSON).
    controls: u64,
    /// Characters (bytes that do not continue a UTF-8 sequence), for the token estimate.
    characters: u64,
}

/// Stage 1 over every whole 64-byte block of `b` (the tail is left out: a bound needs no tail).
fn stage1(b: &[u8], positions: &mut Vec<u32>) -> Totals {
    let mut totals = Totals::default();
    let mut inside = 0u64; // all ones when the previous block ended inside a string
    let mut escape_carry = 0u64; // the previous block ended in an unpaired backslash
    let mut i = 0;
    while i + 64 <= b.len() {
        // SAFETY: the processor has the feature: SSE2 is the x86-64 baseline. (WebAssembly
        // features need no `unsafe`: a runtime without simd128 refuses the module.)
        #[allow(unsafe_code, unused_unsafe)]
        let block = unsafe { arch::classify(b, i) };
        // A quote is escaped when an odd run of backslashes precedes it: simdjson's
        // find_odd_backslash_sequences, carrying an odd run across blocks.
        let escaped = if block.backslashes | escape_carry == 0 {
            0
        } else {
            const EVEN: u64 = 0x5555_5555_5555_5555;
            let bs = block.backslashes;
            let starts = bs & !(bs << 1);
            let even_start_mask = EVEN ^ escape_carry;
            let even_carries = bs.wrapping_add(starts & even_start_mask);
            let (odd_carries, overflow) = bs.overflowing_add(starts & !even_start_mask);
            let odd_carries = odd_carries | escape_carry;
            escape_carry = u64::from(overflow);
            (even_carries & !bs & !EVEN) | (odd_carries & !bs & EVEN)
        };
        let quotes = block.quotes & !escaped;
        // Bit i set when byte i is inside a string (its opening quote included).
        let mut strings = quotes;
        for shift in [1, 2, 4, 8, 16, 32] {
            strings ^= strings << shift;
        }
        strings ^= inside;
        inside = ((strings as i64) >> 63) as u64;
        totals.whitespace += u64::from((block.whitespace & !strings).count_ones());
        totals.controls += u64::from((block.controls & strings).count_ones());
        totals.characters += u64::from(64 - block.continuations.count_ones());
        let mut found = (block.structurals & !strings) | quotes;
        while found != 0 {
            positions.push(i as u32 + found.trailing_zeros());
            found &= found - 1;
        }
        i += 64;
    }
    totals
}

/// The stand-in for stage 2: the nesting depth, the strings, and the member names of the
/// array's elements (depth 2), from the positions alone.
fn walk(b: &[u8], positions: &[u32]) -> (u64, u64) {
    let (mut depth, mut strings, mut names) = (0u32, 0u64, 0u64);
    let mut k = 0;
    while k < positions.len() {
        match b[positions[k] as usize] {
            b'"' => {
                strings += 1;
                k += 1; // its closing quote
                if depth == 2 && positions.get(k + 1).is_some_and(|&p| b[p as usize] == b':') {
                    names += 1;
                }
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        k += 1;
    }
    (strings, names)
}

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: structural-bound FILE (a JSON array, e.g. from `lro sample --count 50000`)");
        std::process::exit(2);
    };
    let text = match std::fs::read(&path) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("structural-bound: reading {path}: {e}");
            std::process::exit(1);
        }
    };
    let mb = text.len() as f64 / 1e6;
    let reps = 10;
    let mut positions = Vec::with_capacity(text.len() / 4);
    println!("{path}: {mb:.1} MB, best of 3 runs of {reps}");
    let (mut best1, mut best2) = (f64::INFINITY, f64::INFINITY);
    let (mut totals, mut counts) = (Totals::default(), (0, 0));
    for _ in 0..3 {
        let start = Instant::now();
        for _ in 0..reps {
            positions.clear();
            totals = stage1(&text, &mut positions);
        }
        best1 = best1.min(start.elapsed().as_secs_f64() / f64::from(reps));
        let start = Instant::now();
        for _ in 0..reps {
            counts = walk(&text, &positions);
        }
        best2 = best2.min(start.elapsed().as_secs_f64() / f64::from(reps));
    }
    println!(
        "stage 1 (bitmaps, strings, positions): {:.0} MB/s ({} positions; {totals:?})",
        mb / best1,
        positions.len()
    );
    println!(
        "stage 2 stand-in (depth, strings, member names): {:.0} MB/s ({} strings, {} member names)",
        mb / best2,
        counts.0,
        counts.1
    );
    println!("both: {:.0} MB/s", mb / (best1 + best2));
}
