//! Server-sent events as they arrive: a parser fed chunk by chunk that says what each run of
//! bytes is (data, the end of a data line, the end of an event) and keeps only a line's field
//! name, so an event of any size streams into its message (`read_events`). Not the
//! `sse-stream` crate (in the lock file through rmcp): it yields each event whole, and an event
//! over the spool threshold must reach the disk as it arrives, not after.

use reqwest::Response;
use tokio::sync::mpsc;

use super::super::spool::{Incoming, Sink, SpoolDir};
use super::super::upstream::UpEvent;
use super::{error_chain, one_line};

/// Reads server-sent events, passing each event's data (one JSON-RPC message) to `inspect`, then
/// to the relay (waiting while the relay's channel is full: the stream is read no faster than
/// the client reads). The stream is read as it comes, a chunk at a time: an event's data goes
/// straight into its message (spooled to disk when large), never gathered line by line.
pub(super) async fn read_events(
    mut response: Response,
    events: &mpsc::Sender<UpEvent>,
    dir: Option<&SpoolDir>,
    inspect: &mut impl FnMut(&[u8]),
) -> Result<(), String> {
    let mut parser = EventParser::default();
    let mut sink = Sink::new(dir, true);
    let mut has_data = false;
    let spool = |e: std::io::Error| format!("an event could not be spooled to disk: {e}");
    loop {
        let chunk = response
            .chunk()
            .await
            .map_err(|e| format!("broke off its event stream: {}", error_chain(&e)))?;
        let Some(chunk) = chunk else { break };
        let mut rest = &chunk[..];
        while !rest.is_empty() {
            let (used, piece) = parser.next(rest);
            rest = &rest[used..];
            match piece {
                Piece::Data(bytes) => {
                    has_data = true;
                    sink.push(bytes).await.map_err(spool)?;
                }
                // Several `data:` lines are one message, joined by a line break.
                Piece::DataBreak if has_data => sink.push(b"\n").await.map_err(spool)?,
                Piece::DataBreak | Piece::Nothing => {}
                Piece::Dispatch => {
                    let done = std::mem::replace(&mut sink, Sink::new(dir, true));
                    if std::mem::take(&mut has_data) && !send_event(events, done, inspect).await.map_err(spool)? {
                        return Ok(());
                    }
                }
            }
        }
    }
    if has_data {
        send_event(events, sink, inspect).await.map_err(spool)?;
    }
    Ok(())
}

/// Passes one event's message on; false when the relay is gone.
async fn send_event(
    events: &mpsc::Sender<UpEvent>,
    sink: Sink<'_>,
    inspect: &mut impl FnMut(&[u8]),
) -> std::io::Result<bool> {
    let event = match sink.finish().await? {
        Incoming::Line(data) if data.is_empty() => return Ok(true),
        Incoming::Line(data) => {
            inspect(&data);
            UpEvent::Message(one_line(data))
        }
        Incoming::Spooled(spooled) => {
            inspect(&spooled.skeleton);
            UpEvent::Spooled(spooled)
        }
    };
    Ok(events.send(event).await.is_ok())
}

/// What the next bytes of an event stream are.
enum Piece<'a> {
    /// Bytes of the current `data:` line's value.
    Data(&'a [u8]),
    /// A `data:` line ended: the next one's value follows a line break.
    DataBreak,
    /// An empty line: the event is complete.
    Dispatch,
    /// Anything else (`event:`, `id:`, `retry:`, comments: nothing the relay needs).
    Nothing,
}

/// A server-sent events parser fed chunk by chunk: only the field name of a line is kept, never
/// a line.
#[derive(Default)]
struct EventParser {
    /// Inside a line: the field name read so far (at most 8 bytes are kept), until its colon.
    field: Vec<u8>,
    state: LineState,
    /// The last byte was a carriage return: a line feed right after it ends nothing.
    after_cr: bool,
}

#[derive(Default, PartialEq)]
enum LineState {
    /// At the start of a line.
    #[default]
    Start,
    /// Reading a field name.
    Field,
    /// After `data:`, before its value (one space is skipped).
    DataStart,
    /// In a `data:` line's value.
    Data,
    /// In a line whose content does not matter.
    Skip,
}

impl EventParser {
    /// Reads from `bytes`: how many were used, and what they were.
    fn next<'a>(&mut self, bytes: &'a [u8]) -> (usize, Piece<'a>) {
        let first = bytes[0];
        if self.after_cr && first == b'\n' {
            self.after_cr = false;
            return (1, Piece::Nothing);
        }
        self.after_cr = false;
        if first == b'\n' || first == b'\r' {
            self.after_cr = first == b'\r';
            let ended = std::mem::take(&mut self.state);
            let bare_data = ended == LineState::Field && self.field == b"data";
            self.field.clear();
            return (
                1,
                match ended {
                    LineState::Start => Piece::Dispatch,
                    LineState::Data | LineState::DataStart => Piece::DataBreak,
                    // A line `data` with no colon is a data line with an empty value.
                    LineState::Field if bare_data => Piece::DataBreak,
                    _ => Piece::Nothing,
                },
            );
        }
        match self.state {
            LineState::Start | LineState::Field => {
                self.state = LineState::Field;
                if first == b':' {
                    self.state = if self.field == b"data" {
                        LineState::DataStart
                    } else {
                        LineState::Skip
                    };
                } else if self.field.len() < 8 {
                    self.field.push(first);
                } else {
                    self.state = LineState::Skip;
                }
                (1, Piece::Nothing)
            }
            LineState::DataStart if first == b' ' => {
                self.state = LineState::Data;
                (1, Piece::Nothing)
            }
            LineState::DataStart | LineState::Data => {
                self.state = LineState::Data;
                let end = bytes
                    .iter()
                    .position(|&b| b == b'\n' || b == b'\r')
                    .unwrap_or(bytes.len());
                (end, Piece::Data(&bytes[..end]))
            }
            LineState::Skip => {
                let end = bytes
                    .iter()
                    .position(|&b| b == b'\n' || b == b'\r')
                    .unwrap_or(bytes.len());
                (end.max(1), Piece::Nothing)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The events' data, as the parser gives it, whatever the chunks.
    fn events(stream: &[u8], chunk: usize) -> Vec<String> {
        let mut parser = EventParser::default();
        let (mut found, mut data, mut has_data) = (Vec::new(), Vec::new(), false);
        for mut rest in stream.chunks(chunk) {
            while !rest.is_empty() {
                let (used, piece) = parser.next(rest);
                rest = &rest[used..];
                match piece {
                    Piece::Data(bytes) => {
                        has_data = true;
                        data.extend_from_slice(bytes);
                    }
                    Piece::DataBreak if has_data => data.push(b'\n'),
                    Piece::Dispatch if std::mem::take(&mut has_data) => {
                        found.push(
                            String::from_utf8(std::mem::take(&mut data))
                                .unwrap()
                                .trim_end()
                                .to_owned(),
                        );
                    }
                    Piece::Dispatch => data.clear(),
                    _ => {}
                }
            }
        }
        found
    }

    #[test]
    fn events_are_parsed_whatever_the_chunks() {
        let stream = b": a comment\nevent: message\nid: 7\ndata: {\"a\":\ndata:  1}\n\nretry: 10\r\ndata:[2]\r\n\r\ndatax: no\ndata\n\ndata: {\"b\": \"c:d\"}\n\n";
        for chunk in 1..stream.len() {
            assert_eq!(
                events(stream, chunk),
                ["{\"a\":\n 1}", "[2]", "{\"b\": \"c:d\"}"],
                "chunks of {chunk}"
            );
        }
    }
}
