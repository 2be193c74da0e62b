//! The admin HTTP API: JSON endpoints to list volumes and their stats,
//! attach and detach volumes, change a write policy, flush a volume and read
//! the allocation, and Prometheus `/metrics` (docs/server.md, "Admin API").
//!
//! It runs on a thread of its own with a single-threaded tokio runtime, so
//! the data path stays std-threaded and an admin client can never take a
//! worker from it. Operations that do I/O (flush, detach, attach, a policy
//! change that writes back) run on tokio's blocking pool, so `/metrics`
//! keeps answering while a long flush is under way.

pub mod metrics;
pub mod report;

use std::net::TcpListener;
use std::sync::Arc;

use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, FromRequestParts, Path, Request, State};
use axum::http::request::Parts;
use axum::http::{header, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use cloudcache_engine::WritePolicy;
use serde::{Deserialize, Serialize};

use crate::config::VolumeConfig;
use crate::nbd::handshake::Exports;
use crate::server::Server;
use report::{AllocationDoc, CacheDoc, Reading, VolumeDoc};

/// Starts the admin API on `addr` (`HOST:PORT`; a `tcp:` prefix is
/// accepted, as in the configuration file) and returns the address it
/// listens on, with a port 0 resolved. The API serves until the process
/// exits.
pub fn spawn(server: Arc<Server>, addr: &str) -> Result<String, String> {
    let spec = addr.strip_prefix("tcp:").unwrap_or(addr);
    let listener = TcpListener::bind(spec).map_err(|e| format!("admin API address {addr}: {e}"))?;
    let bound = listener.local_addr().map_err(|e| format!("admin API address {addr}: {e}"))?;
    listener.set_nonblocking(true).map_err(|e| format!("admin API address {addr}: {e}"))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        // Flushes and detaches are few and rare: two blocking threads at most.
        .max_blocking_threads(2)
        .thread_name("cc-admin-blocking")
        .build()
        .map_err(|e| format!("admin API runtime: {e}"))?;
    let app = router(server);
    std::thread::Builder::new()
        .name("cc-admin".into())
        .spawn(move || {
            runtime.block_on(async move {
                let listener = match tokio::net::TcpListener::from_std(listener) {
                    Ok(l) => l,
                    Err(e) => return log::error!("admin API on {bound}: {e}"),
                };
                if let Err(e) = axum::serve(listener, app).await {
                    log::error!("admin API on {bound} stopped: {e}");
                }
            })
        })
        .map_err(|e| format!("admin API thread: {e}"))?;
    log::info!("admin API listening on http://{bound}");
    // SocketAddr's Display puts an IPv6 host in brackets, as a URL needs.
    Ok(bound.to_string())
}

/// The API's routes over `server`.
pub fn router(server: Arc<Server>) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/volumes", get(list_volumes).post(attach_volume))
        .route("/volumes/{name}", get(show_volume).delete(detach_volume))
        .route("/volumes/{name}/write-policy", put(set_write_policy))
        .route("/volumes/{name}/flush", post(flush_volume))
        .route("/allocation", get(allocation))
        .route("/cache", get(cache))
        .route("/metrics", get(metrics))
        .fallback(no_such_endpoint)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(server)
}

/// An error answer: a status and `{"error": "..."}`.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError { status, message: message.into() }
    }

    fn no_volume(name: &str) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, format!("no volume named {name:?}"))
    }
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: &'a str,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(ErrorBody { error: &self.message })).into_response()
    }
}

/// A JSON request body whose rejections are [`ApiError`]s.
struct Body<T>(T);

impl<T, S> FromRequest<S> for Body<T>
where
    Json<T>: FromRequest<S, Rejection = JsonRejection>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        match Json::<T>::from_request(request, state).await {
            Ok(Json(value)) => Ok(Body(value)),
            Err(e) => Err(ApiError::new(e.status(), format!("request body: {}", e.body_text()))),
        }
    }
}

/// The `{name}` of a volume path, whose rejections are [`ApiError`]s.
struct VolumeName(String);

impl<S: Send + Sync> FromRequestParts<S> for VolumeName {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match Path::<String>::from_request_parts(parts, state).await {
            Ok(Path(name)) => Ok(VolumeName(name)),
            Err(e) => Err(ApiError::new(e.status(), format!("volume name in the path: {}", e.body_text()))),
        }
    }
}

type ApiResult<T> = Result<T, ApiError>;

async fn no_such_endpoint(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        format!("no endpoint {method} {}; see /volumes, /allocation, /cache, /metrics", uri.path()),
    )
}

async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::new(StatusCode::METHOD_NOT_ALLOWED, format!("{} does not take {method}", uri.path()))
}

/// The endpoints, for a person who opens the API's root.
const ENDPOINTS: [&str; 9] = [
    "GET /volumes",
    "POST /volumes",
    "GET /volumes/{name}",
    "DELETE /volumes/{name}",
    "PUT /volumes/{name}/write-policy",
    "POST /volumes/{name}/flush",
    "GET /allocation",
    "GET /cache",
    "GET /metrics",
];

async fn index() -> Json<serde_json::Value> {
    Json(serde_json::json!({ "service": "cloudcache admin API", "endpoints": ENDPOINTS }))
}

async fn list_volumes(State(server): State<Arc<Server>>) -> Json<Vec<VolumeDoc>> {
    let reading = Reading::take(&server);
    Json(reading.volumes.iter().map(VolumeDoc::new).collect())
}

async fn show_volume(
    State(server): State<Arc<Server>>,
    VolumeName(name): VolumeName,
) -> ApiResult<Json<VolumeDoc>> {
    let reading = Reading::take(&server);
    reading.volume(&name).map(|v| Json(VolumeDoc::new(v))).ok_or_else(|| ApiError::no_volume(&name))
}

/// `POST /volumes`'s body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AttachRequest {
    name: String,
    backend: String,
    write_policy: Option<String>,
}

async fn attach_volume(
    State(server): State<Arc<Server>>,
    Body(request): Body<AttachRequest>,
) -> ApiResult<(StatusCode, Json<VolumeDoc>)> {
    if request.name.is_empty() || request.name.len() > 4096 {
        return Err(ApiError::new(StatusCode::BAD_REQUEST, "name: must be 1 to 4096 bytes"));
    }
    if request.backend.is_empty() {
        return Err(ApiError::new(StatusCode::BAD_REQUEST, "backend: must be a file path or an nbd:// URI"));
    }
    let write_policy = match &request.write_policy {
        Some(p) => parse_policy(p)?,
        None => WritePolicy::WriteBack,
    };
    refuse_while_stopping(&server)?;
    if server.exports().iter().any(|e| e.volume.name == request.name) {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            format!("volume {:?} is already attached", request.name),
        ));
    }
    let config = VolumeConfig { name: request.name.clone(), backend: request.backend, write_policy };
    let s = server.clone();
    blocking(move || s.attach(&config)).await?.map_err(|e| {
        // Server::attach names a backend that cannot be opened "volume NAME: ...":
        // that is the request's fault; anything else (the store) is ours.
        let status = if e.starts_with(&format!("volume {}:", request.name)) {
            StatusCode::BAD_REQUEST
        } else if e.contains("already attached") {
            StatusCode::CONFLICT
        } else {
            StatusCode::INTERNAL_SERVER_ERROR
        };
        ApiError::new(status, e)
    })?;
    let reading = Reading::take(&server);
    let doc = reading.volume(&request.name).map(VolumeDoc::new).ok_or_else(|| {
        ApiError::new(StatusCode::CONFLICT, format!("volume {:?} was detached again at once", request.name))
    })?;
    Ok((StatusCode::CREATED, Json(doc)))
}

/// What a detach or flush did.
#[derive(Serialize)]
struct FlushDoc {
    name: String,
    /// Dirty blocks written back to the backend.
    written_back_blocks: u64,
}

async fn detach_volume(
    State(server): State<Arc<Server>>,
    VolumeName(name): VolumeName,
) -> ApiResult<Json<serde_json::Value>> {
    refuse_while_stopping(&server)?;
    known(&server, &name)?;
    let (s, n) = (server.clone(), name.clone());
    blocking(move || s.detach(&n)).await?.map_err(|e| operation_failed(&server, &name, e))?;
    Ok(Json(serde_json::json!({ "name": name, "detached": true })))
}

/// `PUT /volumes/{name}/write-policy`'s body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyRequest {
    write_policy: String,
}

async fn set_write_policy(
    State(server): State<Arc<Server>>,
    VolumeName(name): VolumeName,
    Body(request): Body<PolicyRequest>,
) -> ApiResult<Json<VolumeDoc>> {
    let policy = parse_policy(&request.write_policy)?;
    refuse_while_stopping(&server)?;
    known(&server, &name)?;
    let (s, n) = (server.clone(), name.clone());
    blocking(move || s.set_write_policy(&n, policy))
        .await?
        .map_err(|e| operation_failed(&server, &name, e))?;
    let reading = Reading::take(&server);
    reading.volume(&name).map(|v| Json(VolumeDoc::new(v))).ok_or_else(|| ApiError::no_volume(&name))
}

async fn flush_volume(
    State(server): State<Arc<Server>>,
    VolumeName(name): VolumeName,
) -> ApiResult<Json<FlushDoc>> {
    known(&server, &name)?;
    let (s, n) = (server.clone(), name.clone());
    let written =
        blocking(move || s.flush_volume(&n)).await?.map_err(|e| operation_failed(&server, &name, e))?;
    Ok(Json(FlushDoc { name, written_back_blocks: written }))
}

async fn allocation(State(server): State<Arc<Server>>) -> Json<AllocationDoc> {
    Json(AllocationDoc::new(&Reading::take(&server)))
}

async fn cache(State(server): State<Arc<Server>>) -> Json<CacheDoc> {
    Json(CacheDoc::new(&server, &Reading::take(&server)))
}

async fn metrics(State(server): State<Arc<Server>>) -> impl IntoResponse {
    let text = metrics::render(&Reading::take(&server));
    ([(header::CONTENT_TYPE, metrics::CONTENT_TYPE)], text)
}

fn parse_policy(text: &str) -> ApiResult<WritePolicy> {
    text.parse().map_err(|e: String| ApiError::new(StatusCode::BAD_REQUEST, format!("write_policy: {e}")))
}

fn known(server: &Server, name: &str) -> ApiResult<()> {
    if server.exports().iter().any(|e| e.volume.name == name) {
        Ok(())
    } else {
        Err(ApiError::no_volume(name))
    }
}

/// Changing volumes while the server shuts down would race its final flush.
fn refuse_while_stopping(server: &Server) -> ApiResult<()> {
    if server.shutting_down() {
        Err(ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "the server is shutting down"))
    } else {
        Ok(())
    }
}

/// An operation on a known volume failed: 404 if it went away meanwhile,
/// else 500 with the server's reason (a backend error during write-back).
fn operation_failed(server: &Server, name: &str, error: String) -> ApiError {
    match known(server, name) {
        Err(gone) => gone,
        Ok(()) => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, error),
    }
}

/// Runs blocking server work off the runtime's only thread.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> ApiResult<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("admin operation failed: {e}")))
}
