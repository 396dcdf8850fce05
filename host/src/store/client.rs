//! object_store's HTTP through the reqwest 0.12 client the rest of lro builds (rustls on ring):
//! object_store's own would be reqwest 0.13, a second HTTP stack to build.

use std::time::Duration;

use object_store::ClientOptions;
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpResponse, HttpService,
};

/// object_store's HTTP through the reqwest 0.12 client the rest of lro builds (rustls on ring).
#[derive(Debug)]
pub(super) struct Connector;

impl HttpConnector for Connector {
    fn connect(&self, _options: &ClientOptions) -> object_store::Result<HttpClient> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .read_timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| object_store::Error::Generic {
                store: "S3",
                source: Box::new(e),
            })?;
        Ok(HttpClient::new(Reqwest(client)))
    }
}

#[derive(Debug)]
struct Reqwest(reqwest::Client);

#[async_trait::async_trait]
impl HttpService for Reqwest {
    async fn call(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
        let (parts, body) = request.into_parts();
        let url = reqwest::Url::parse(&parts.uri.to_string()).map_err(|e| HttpError::new(HttpErrorKind::Request, e))?;
        let mut outgoing = reqwest::Request::new(parts.method, url);
        *outgoing.headers_mut() = parts.headers;
        *outgoing.body_mut() = Some(match body.as_bytes() {
            Some(bytes) => reqwest::Body::from(bytes.clone()),
            None => reqwest::Body::wrap(body),
        });
        let response = self.0.execute(outgoing).await.map_err(|e| {
            let kind = if e.is_connect() {
                HttpErrorKind::Connect
            } else if e.is_timeout() {
                HttpErrorKind::Timeout
            } else {
                HttpErrorKind::Request
            };
            HttpError::new(kind, e)
        })?;
        let response: http::Response<reqwest::Body> = response.into();
        let (parts, body) = response.into_parts();
        let body = http_body_util_map(body);
        Ok(HttpResponse::from_parts(parts, body))
    }
}

/// A reqwest body as object_store's response body.
fn http_body_util_map(body: reqwest::Body) -> object_store::client::HttpResponseBody {
    use http_body_util::BodyExt;
    object_store::client::HttpResponseBody::new(body.map_err(|e| HttpError::new(HttpErrorKind::Decode, e)))
}
