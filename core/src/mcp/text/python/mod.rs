//! Rule 1 of [`read_text`](super::read_text): a Python literal read as the JSON it stands for.

mod strings;

/// Deeper nesting is not read as Python: the parser recurses once per level, and offloaded
/// records may nest at most `jq::MAX_DEPTH` levels anyway.
const PY_MAX_DEPTH: usize = 512;

/// Marks a byte of the output to drop at the end. `(x)` is `x` but `(x,)` is a tuple, which is
/// known only after `x` is written; removing the `[` written for it then would move everything
/// after it, once per level. The byte never occurs in the output otherwise: serde_json escapes
/// control characters in strings, and nothing else written holds them.
const HOLE: u8 = 0x01;

/// Rule 1: the JSON text of `text` read as a Python literal list, tuple, dict or set; `None`
/// when the trimmed text does not start with `[`, `{` or `(`, or is not one such literal, whole.
/// Strings are decoded as Python decodes them (adjacent ones joined); calls, `<...>` reprs, `nan`
/// and `inf` become strings of their source text; a dict key that is not a string becomes its
/// literal text; numbers keep their digits, made valid JSON; more than [`PY_MAX_DEPTH`] levels
/// of nesting is not read.
pub(super) fn python(text: &str) -> Option<String> {
    let t = text.trim();
    if !matches!(t.as_bytes().first(), Some(b'[' | b'{' | b'(')) {
        return None;
    }
    let mut p = Py {
        s: t,
        b: t.as_bytes(),
        i: 0,
        out: Vec::with_capacity(t.len()),
        buf: String::new(),
        holes: false,
    };
    p.value(0)?;
    p.ws();
    if p.i != p.b.len() {
        return None;
    }
    if p.holes {
        p.out.retain(|&c| c != HOLE);
    }
    // `('a' 'b')` or `(1)` is a scalar in parentheses, not rows.
    if !matches!(p.out.first(), Some(b'[' | b'{')) {
        return None;
    }
    String::from_utf8(p.out).ok()
}

/// A recursive-descent reader of a Python literal, writing its JSON as it goes.
struct Py<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
    out: Vec<u8>,
    /// The string being decoded (adjacent literals are joined before it is written).
    buf: String,
    holes: bool,
}

impl Py<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn at(&self, offset: usize) -> Option<u8> {
        self.b.get(self.i + offset).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        let found = self.peek() == Some(c);
        if found {
            self.i += 1;
        }
        found
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r' | b'\x0c')) {
            self.i += 1;
        }
    }

    /// Writes `self.s[start..end]` as a JSON string.
    fn put_source(&mut self, start: usize, end: usize) -> Option<()> {
        let source = self.s.get(start..end)?;
        serde_json::to_writer(&mut self.out, source).ok()
    }

    fn value(&mut self, depth: usize) -> Option<()> {
        if depth > PY_MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'[' => {
                self.i += 1;
                self.out.push(b'[');
                self.items(b']', depth, true)?;
                self.out.push(b']');
                Some(())
            }
            b'(' => self.paren(depth),
            b'{' => self.brace(depth),
            b'\'' | b'"' => self.strings(),
            b'<' => self.angle(),
            b'0'..=b'9' | b'.' | b'+' | b'-' => self.number(),
            c if c.is_ascii_alphabetic() || c == b'_' => {
                if self.string_prefix().is_some() {
                    self.strings()
                } else {
                    self.name()
                }
            }
            _ => None,
        }
    }

    /// Comma-separated values up to `close` (a trailing comma allowed), after the opening
    /// bracket; `first` is false when a value has been written already.
    fn items(&mut self, close: u8, depth: usize, mut first: bool) -> Option<()> {
        loop {
            self.ws();
            if self.eat(close) {
                return Some(());
            }
            if !first {
                self.out.push(b',');
            }
            self.value(depth + 1)?;
            first = false;
            self.ws();
            if self.eat(close) {
                return Some(());
            }
            if !self.eat(b',') {
                return None;
            }
        }
    }

    /// A tuple, or a value in parentheses.
    fn paren(&mut self, depth: usize) -> Option<()> {
        self.i += 1;
        let open = self.out.len();
        self.out.push(b'[');
        self.ws();
        if self.eat(b')') {
            self.out.push(b']');
            return Some(());
        }
        self.value(depth + 1)?;
        self.ws();
        if self.eat(b')') {
            *self.out.get_mut(open)? = HOLE;
            self.holes = true;
            return Some(());
        }
        if !self.eat(b',') {
            return None;
        }
        self.items(b')', depth, false)?;
        self.out.push(b']');
        Some(())
    }

    /// A dict or a set, told apart by what follows the first item.
    fn brace(&mut self, depth: usize) -> Option<()> {
        self.i += 1;
        let open = self.out.len();
        self.out.push(b'{');
        self.ws();
        if self.eat(b'}') {
            self.out.push(b'}');
            return Some(());
        }
        let mut key = (self.i, self.out.len());
        self.value(depth + 1)?;
        let mut key_end = self.i;
        self.ws();
        if self.peek() != Some(b':') {
            *self.out.get_mut(open)? = b'[';
            if !self.eat(b'}') {
                if !self.eat(b',') {
                    return None;
                }
                self.items(b'}', depth, false)?;
            }
            self.out.push(b']');
            return Some(());
        }
        loop {
            self.key(key.0, key_end, key.1)?;
            self.i += 1;
            self.out.push(b':');
            self.ws();
            self.value(depth + 1)?;
            self.ws();
            if self.eat(b'}') {
                break;
            }
            if !self.eat(b',') {
                return None;
            }
            self.ws();
            if self.eat(b'}') {
                break;
            }
            self.out.push(b',');
            key = (self.i, self.out.len());
            self.value(depth + 1)?;
            key_end = self.i;
            self.ws();
            if self.peek() != Some(b':') {
                return None;
            }
        }
        self.out.push(b'}');
        Some(())
    }

    /// Makes the key just written from `source..source_end`, at `written` in the output, a JSON
    /// string: a key that reads as a string stays, any other becomes its literal text.
    fn key(&mut self, source: usize, source_end: usize, written: usize) -> Option<()> {
        let is_string = self.out.get(written..)?.iter().find(|&&c| c != HOLE) == Some(&b'"');
        if !is_string {
            self.out.truncate(written);
            self.put_source(source, source_end)?;
        }
        Some(())
    }

    /// A run of digits and underscores starting with a digit (possibly empty), as its span.
    fn digits(&mut self, hex: bool) -> (usize, usize) {
        let start = self.i;
        if self
            .peek()
            .is_some_and(|c| c.is_ascii_digit() || (hex && c.is_ascii_hexdigit()))
        {
            while self
                .peek()
                .is_some_and(|c| c == b'_' || c.is_ascii_digit() || (hex && c.is_ascii_hexdigit()))
            {
                self.i += 1;
            }
        }
        (start, self.i)
    }

    /// Writes the digits of `span` without underscores.
    fn put_digits(&mut self, (start, end): (usize, usize)) -> Option<()> {
        let digits = self.b.get(start..end)?;
        self.out.extend(digits.iter().filter(|&&c| c != b'_'));
        Some(())
    }

    fn number(&mut self) -> Option<()> {
        let start = self.i;
        let negative = self.peek() == Some(b'-');
        if matches!(self.peek(), Some(b'-' | b'+')) {
            self.i += 1;
            while matches!(self.peek(), Some(b' ' | b'\t')) {
                self.i += 1;
            }
        }
        if self.peek().is_some_and(|c| c.is_ascii_alphabetic()) {
            let name = self.i;
            self.ident();
            return match self.s.get(name..self.i)? {
                "inf" | "nan" => self.put_source(start, self.i),
                _ => None,
            };
        }
        if self.peek() == Some(b'0') && matches!(self.at(1), Some(b'x' | b'X' | b'o' | b'O' | b'b' | b'B')) {
            return self.radix(start, negative);
        }
        let int = self.digits(false);
        let fraction = self.eat(b'.').then(|| self.digits(false));
        if int.0 == int.1 && fraction.is_none_or(|(a, b)| a == b) {
            return None;
        }
        let mut exponent = None;
        if matches!(self.peek(), Some(b'e' | b'E')) {
            let mark = self.i;
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            let digits = self.digits(false);
            if digits.0 == digits.1 {
                return None;
            }
            exponent = Some((mark, digits));
        }
        if matches!(self.peek(), Some(b'j' | b'J')) {
            // An imaginary number has no JSON counterpart.
            self.i += 1;
            if !self.ends_number() {
                return None;
            }
            return self.put_source(start, self.i);
        }
        if !self.ends_number() {
            return None;
        }
        if negative {
            self.out.push(b'-');
        }
        // JSON allows no leading zeros (Python floats do: `007.5`).
        let int_digits = self.b.get(int.0..int.1)?;
        let first = int_digits.iter().position(|&c| c != b'0' && c != b'_');
        match first {
            Some(p) => self.put_digits((int.0 + p, int.1))?,
            None => self.out.push(b'0'),
        }
        if let Some(fraction) = fraction {
            self.out.push(b'.');
            if fraction.0 == fraction.1 {
                self.out.push(b'0');
            } else {
                self.put_digits(fraction)?;
            }
        }
        if let Some((mark, digits)) = exponent {
            // The `e` or `E` and the sign, as written.
            self.out.extend_from_slice(self.b.get(mark..digits.0)?);
            self.put_digits(digits)?;
        }
        Some(())
    }

    /// Whether the number read ends here (`1.2.3` and `1abc` are not numbers).
    fn ends_number(&self) -> bool {
        !self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.')
    }

    /// `0x..`, `0o..` or `0b..`, written in decimal; one too large for 128 bits becomes a string of
    /// its source text.
    fn radix(&mut self, start: usize, negative: bool) -> Option<()> {
        let radix = match self.at(1)?.to_ascii_lowercase() {
            b'x' => 16,
            b'o' => 8,
            _ => 2,
        };
        self.i += 2;
        self.eat(b'_');
        let (a, b) = self.digits(radix == 16);
        if a == b || !self.ends_number() {
            return None;
        }
        let digits: String = self.s.get(a..b)?.chars().filter(|&c| c != '_').collect();
        match u128::from_str_radix(&digits, radix) {
            Ok(n) => {
                let sign = if negative && n != 0 { "-" } else { "" };
                self.out.extend_from_slice(format!("{sign}{n}").as_bytes());
                Some(())
            }
            Err(e) if matches!(e.kind(), std::num::IntErrorKind::PosOverflow) => self.put_source(start, self.i),
            Err(_) => None,
        }
    }

    fn ident(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_') {
            self.i += 1;
        }
    }

    /// `True`, `False`, `None`, `nan`, `inf`, or a call of a (dotted) name.
    fn name(&mut self) -> Option<()> {
        let start = self.i;
        self.ident();
        while self.peek() == Some(b'.') && self.at(1).is_some_and(|c| c.is_ascii_alphabetic() || c == b'_') {
            self.i += 1;
            self.ident();
        }
        if self.peek() == Some(b'(') {
            self.skip_call()?;
            return self.put_source(start, self.i);
        }
        match self.s.get(start..self.i)? {
            "True" => self.out.extend_from_slice(b"true"),
            "False" => self.out.extend_from_slice(b"false"),
            "None" => self.out.extend_from_slice(b"null"),
            "nan" | "inf" => self.put_source(start, self.i)?,
            _ => return None,
        }
        Some(())
    }

    /// Past a call's arguments, from its `(` to the matching `)`: brackets balanced and string
    /// literals skipped whole, without reading the arguments as values (they may be anything,
    /// such as `tzinfo=datetime.timezone.utc`).
    fn skip_call(&mut self) -> Option<()> {
        let mut open = Vec::new();
        loop {
            let c = self.peek()?;
            match c {
                b'(' => open.push(b')'),
                b'[' => open.push(b']'),
                b'{' => open.push(b'}'),
                b')' | b']' | b'}' => {
                    if open.pop()? != c {
                        return None;
                    }
                    if open.is_empty() {
                        self.i += 1;
                        return Some(());
                    }
                }
                b'\'' | b'"' => {
                    // Read as raw: escapes only need to not end the string here.
                    self.literal(true, false)?;
                    self.buf.clear();
                    continue;
                }
                _ => {}
            }
            self.i += 1;
        }
    }

    /// An object's default repr such as `<Color.RED: 1>` or `<Foo object at 0x7f…>`, on one line,
    /// as a string of its text.
    fn angle(&mut self) -> Option<()> {
        let start = self.i;
        let mut level = 0usize;
        loop {
            match self.peek()? {
                b'<' => level += 1,
                b'>' => {
                    level -= 1;
                    if level == 0 {
                        self.i += 1;
                        return self.put_source(start, self.i);
                    }
                }
                b'\n' | b'\r' => return None,
                _ => {}
            }
            self.i += 1;
        }
    }
}
