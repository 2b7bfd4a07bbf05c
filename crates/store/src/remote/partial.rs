//! The HTTP client of the remote stores: `object_store`'s own (reqwest), with one repair of
//! the answers it hands on. Some S3 servers (`rclone serve s3` 1.75, gofakes3 inside) answer
//! a ranged GET with `200 OK`, the requested bytes and a `Content-Range` header naming them,
//! where HTTP says `206 Partial Content`. `object_store` refuses every ranged answer that is
//! not a 206 ("Received non-partial response when range requested"), which would make the
//! store read whole objects from such servers. Here such an answer becomes the 206 it means
//! when it is unambiguous: the request had a `Range` header, the answer carries a
//! `Content-Range` and its `Content-Length` is exactly the length of that range. A 200 with
//! the whole object (a server that really ignores ranges) is passed on unchanged and still
//! handled by the store's whole-object fallback.

use std::future::Future;
use std::pin::Pin;

use http::header::{CONTENT_LENGTH, CONTENT_RANGE, RANGE};
use http::StatusCode;
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpRequest, HttpResponse, HttpService, ReqwestConnector,
};
use object_store::ClientOptions;

/// [`ReqwestConnector`]'s clients, wrapped in [`PartialAnswers`].
#[derive(Debug, Default)]
pub(crate) struct PartialAnswersConnector;

impl HttpConnector for PartialAnswersConnector {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let inner = ReqwestConnector::default().connect(options)?;
        Ok(HttpClient::new(PartialAnswers { inner }))
    }
}

/// An HTTP client that reads a `200` answer to a ranged request as the `206` it is when it
/// names and holds exactly one range (see the module's documentation).
#[derive(Debug)]
struct PartialAnswers {
    inner: HttpClient,
}

impl HttpService for PartialAnswers {
    fn call<'life0, 'async_trait>(
        &'life0 self,
        request: HttpRequest,
    ) -> Pin<Box<dyn Future<Output = Result<HttpResponse, HttpError>> + Send + 'async_trait>>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            let ranged = request.headers().contains_key(RANGE);
            let mut response = self.inner.execute(request).await?;
            if ranged && response.status() == StatusCode::OK && names_its_body(&response) {
                *response.status_mut() = StatusCode::PARTIAL_CONTENT;
            }
            Ok(response)
        })
    }
}

/// True when the answer's `Content-Range` is `bytes FIRST-LAST/SIZE` and its
/// `Content-Length` is `LAST - FIRST + 1`.
fn names_its_body(response: &HttpResponse) -> bool {
    let header = |name| response.headers().get(name).and_then(|v| v.to_str().ok());
    let (Some(range), Some(length)) = (header(CONTENT_RANGE), header(CONTENT_LENGTH)) else {
        return false;
    };
    range_length(range).is_some_and(|n| length.trim().parse::<u64>() == Ok(n))
}

/// The length of the span of a `Content-Range` value `bytes FIRST-LAST/SIZE` (SIZE may be `*`).
fn range_length(value: &str) -> Option<u64> {
    let span = value.trim().strip_prefix("bytes ")?.split_once('/')?.0;
    let (first, last) = span.split_once('-')?;
    let (first, last): (u64, u64) = (first.trim().parse().ok()?, last.trim().parse().ok()?);
    (last >= first).then(|| last - first + 1)
}

#[cfg(test)]
mod tests {
    use super::range_length;

    #[test]
    fn content_range_spans() {
        assert_eq!(range_length("bytes 100-199/13081080"), Some(100));
        assert_eq!(range_length("bytes 0-0/*"), Some(1));
        assert_eq!(range_length("bytes 5-4/10"), None);
        assert_eq!(range_length("bytes */10"), None);
        assert_eq!(range_length("items 0-1/2"), None);
    }
}
