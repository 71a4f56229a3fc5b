//! The HTTP/1.1 layer: request bytes, response heads, body framing, Content-Range checks,
//! redirects and file naming. It is a pure state machine over byte slices (no sockets, no
//! files), so everything here is testable, and fuzzable, without a server.

pub mod auth;
mod chunked;
pub mod cookies;
pub mod decode;
mod error;
mod head;
pub(crate) mod naming;
pub mod proxy;
mod range;
mod redirect;
mod request;

pub use chunked::{ChunkEvent, ChunkedDecoder, MAX_CHUNK_LINE, MAX_TRAILERS};
pub use error::HttpError;
pub use head::{
    described_by, duplicates, parse_head, Duplicate, Framing, ResponseHead, MAX_HEAD, MAX_HEADERS,
};
pub use naming::{
    filename_from_content_disposition, filename_from_content_disposition_with, filename_from_url,
};
pub use range::{parse_content_range, ContentRange};
pub use redirect::{is_redirect, resolve_location};
pub use request::{write_request, RequestSpec, METALINK_TYPES};
