//! The handler registry's entries: a typed handler (serde params in, `Serialize` out) as
//! the untyped function the executor calls, with its [`Mode`] and time budget.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::context::Context;
use crate::error::Error;

pub(super) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;
pub(super) type HandlerFn = Arc<dyn Fn(Context, Value) -> BoxFuture<Result<Value, Error>> + Send + Sync>;

/// How a handler's answer reaches Sundial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// `200` with the result if the handler returns within the time budget, else `202` and
    /// the signed result callback when it does. The default.
    #[default]
    Auto,
    /// Always `200` with the result (the handler must finish within the job's `timeout_ms`).
    Sync,
    /// Always `202` at once, then the signed result callback.
    Async,
}

/// Per-handler options for [`Builder::handler_with`](crate::Builder::handler_with).
#[derive(Debug, Clone, Copy, Default)]
pub struct HandlerOptions {
    pub mode: Mode,
    /// The time budget of [`Mode::Auto`]; default the executor's [`Builder::sync_budget`].
    ///
    /// [`Builder::sync_budget`]: crate::Builder::sync_budget
    pub budget: Option<Duration>,
}

impl HandlerOptions {
    pub fn sync() -> Self {
        HandlerOptions { mode: Mode::Sync, budget: None }
    }
    pub fn asynchronous() -> Self {
        HandlerOptions { mode: Mode::Async, budget: None }
    }
    pub fn budget(budget: Duration) -> Self {
        HandlerOptions { mode: Mode::Auto, budget: Some(budget) }
    }
}

#[derive(Clone)]
pub(super) struct HandlerEntry {
    pub(super) f: HandlerFn,
    pub(super) options: HandlerOptions,
}

impl HandlerEntry {
    /// `f`, taking the run's params as `P` and answering any `Serialize`, as an entry of
    /// the registry.
    pub(super) fn typed<P, O, F, Fut>(name: &str, options: HandlerOptions, f: F) -> Self
    where
        P: DeserializeOwned + Send + 'static,
        O: Serialize + Send + 'static,
        F: Fn(Context, P) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, Error>> + Send + 'static,
    {
        let f = Arc::new(f);
        let handler_name = name.to_string();
        let wrapped: HandlerFn = Arc::new(move |ctx: Context, params: Value| -> BoxFuture<Result<Value, Error>> {
            let f = f.clone();
            let name = handler_name.clone();
            Box::pin(async move {
                let p: P = parse_params(&name, params)?;
                let out = f(ctx, p).await?;
                serde_json::to_value(out)
                    .map_err(|e| Error::no_retry(format!("the output of handler `{name}` is not JSON: {e}")))
            })
        });
        HandlerEntry { f: wrapped, options }
    }
}

fn parse_params<P: DeserializeOwned>(name: &str, params: Value) -> Result<P, Error> {
    let first = serde_path_to_error::deserialize::<_, P>(&params);
    match first {
        Ok(p) => Ok(p),
        Err(e) => {
            // A job with no params sends `null`: read it as `{}` when that fits.
            if params.is_null()
                && let Ok(p) = serde_json::from_value::<P>(json!({}))
            {
                return Ok(p);
            }
            let path = e.path().to_string();
            let at = if path == "." { String::new() } else { format!("{path}: ") };
            Err(Error::no_retry(format!("params do not match handler `{name}`: {at}{}", e.into_inner())))
        }
    }
}
