//! A fixed-capacity key buffer: MIOpen keys are built on the stack, never on the heap.

use core::fmt;

/// Capacity of a key buffer in bytes. The longest key MIOpen can write for kiln's bounded
/// sizes (3-D, three layouts, mixed types, casts, 8-digit sizes) is well under this.
pub const KEY_CAPACITY: usize = 256;

/// A key under construction. Pushing past [`KEY_CAPACITY`] sets an overflow flag instead of
/// panicking; [`KeyBuf::is_truncated`] reports it and lookups treat such a key as a miss.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct KeyBuf {
    buf: heapless::String<KEY_CAPACITY>,
    truncated: bool,
}

impl KeyBuf {
    /// An empty key.
    pub const fn new() -> Self {
        KeyBuf {
            buf: heapless::String::new(),
            truncated: false,
        }
    }

    /// The key text.
    pub fn as_str(&self) -> &str {
        self.buf.as_str()
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Whether something did not fit.
    pub fn is_truncated(&self) -> bool {
        self.truncated
    }

    /// Appends text.
    pub fn push_str(&mut self, s: &str) {
        if self.buf.push_str(s).is_err() {
            self.truncated = true;
        }
    }

    /// Appends one character.
    pub fn push_char(&mut self, c: char) {
        if self.buf.push(c).is_err() {
            self.truncated = true;
        }
    }

    /// Appends a number in decimal without going through `core::fmt` (it is on the lookup path).
    pub fn push_u32(&mut self, mut v: u32) {
        let mut digits = [0u8; 10];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        // The digits are ASCII, so this cannot fail.
        if let Ok(s) = core::str::from_utf8(&digits[i..]) {
            self.push_str(s);
        }
    }
}

impl fmt::Debug for KeyBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for KeyBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
