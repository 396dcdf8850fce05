//! object_store's HTTP through the reqwest 0.12 client the rest of lro builds (rustls on ring):
//! object_store's own would be reqwest 0.13, a second HTTP stack to build.

use std::time::Duration;

use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpResponse, HttpService,
};
use object_store::{ClientConfigKey, ClientOptions};

/// object_store's HTTP through the reqwest 0.12 client the rest of lro builds (rustls on ring).
#[derive(Debug)]
pub(super) struct Connector;

impl HttpConnector for Connector {
    /// A client as object_store's own would be made from `options` (`AWS_ALLOW_HTTP`,
    /// `AWS_ALLOW_INVALID_CERTIFICATES`, `AWS_PROXY_URL`, the timeouts), with bounds of its own
    /// where none is given: a store that hangs must not hold a tool call for long.
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let value = |key: ClientConfigKey| options.get_config_value(&key);
        let yes = |key: ClientConfigKey| value(key).is_some_and(|v| v.eq_ignore_ascii_case("true"));
        let duration = |key: ClientConfigKey, default: u64| {
            value(key)
                .and_then(|v| humantime::parse_duration(&v).ok())
                .unwrap_or(Duration::from_secs(default))
        };
        let error = |e: reqwest::Error| object_store::Error::Generic {
            store: "S3",
            source: Box::new(e),
        };
        let mut builder = reqwest::Client::builder()
            .https_only(!yes(ClientConfigKey::AllowHttp))
            .danger_accept_invalid_certs(yes(ClientConfigKey::AllowInvalidCertificates))
            .connect_timeout(duration(ClientConfigKey::ConnectTimeout, 5))
            .read_timeout(duration(ClientConfigKey::ReadTimeout, 30))
            // A whole request (one part of a multipart upload at most 8 MiB) within a minute.
            .timeout(duration(ClientConfigKey::Timeout, 60));
        if let Some(proxy) = value(ClientConfigKey::ProxyUrl) {
            builder = builder.proxy(reqwest::Proxy::all(proxy).map_err(error)?);
        }
        Ok(HttpClient::new(Reqwest(builder.build().map_err(error)?)))
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
