//! [`Builder`]: an executor's secrets, Sundial's URLs, its registration details, time
//! budgets and handlers, read from code or the environment.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::Notify;

use crate::calls::Calls;
use crate::context::Context;
use crate::error::Error;
use crate::verify;

use super::answers::Answers;
use super::handlers::{HandlerEntry, HandlerOptions};
use super::state::{Executor, ExecutorError, Inner};

/// Builds an [`Executor`]: `Executor::builder().secret(..).scheduler_url(..).app_id(..)
/// .handler("name", |ctx, params: MyType| async move { … }).build()`.
#[must_use]
pub struct Builder {
    secrets: Vec<String>,
    urls: Vec<String>,
    app_id: Option<String>,
    address: Option<String>,
    name: Option<String>,
    tags: Vec<String>,
    metadata: Option<Value>,
    sync_budget: Duration,
    remember: Duration,
    remember_max: usize,
    grace: Duration,
    register: bool,
    handlers: HashMap<String, HandlerEntry>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            secrets: Vec::new(),
            urls: Vec::new(),
            app_id: None,
            address: None,
            name: None,
            tags: Vec::new(),
            metadata: None,
            sync_budget: Duration::from_secs(10),
            remember: Duration::from_secs(15 * 60),
            remember_max: 10_000,
            grace: Duration::from_secs(30),
            register: true,
            handlers: HashMap::new(),
        }
    }
}

fn split_list(v: &str) -> impl Iterator<Item = String> + '_ {
    v.split([',', ' ']).map(str::trim).filter(|s| !s.is_empty()).map(String::from)
}

impl Builder {
    /// Read what the environment gives: `SUNDIAL_SECRET` (several comma separated),
    /// `SUNDIAL_APP_ID`, `SUNDIAL_URL` (several comma separated), `SUNDIAL_EXECUTOR_URL`
    /// (the address Sundial delivers to).
    pub fn from_env(mut self) -> Self {
        if let Ok(v) = std::env::var("SUNDIAL_SECRET") {
            self.secrets.extend(split_list(&v));
        }
        if let Ok(v) = std::env::var("SUNDIAL_URL") {
            self.urls.extend(split_list(&v));
        }
        if let Ok(v) = std::env::var("SUNDIAL_APP_ID")
            && !v.trim().is_empty()
        {
            self.app_id = Some(v.trim().to_string());
        }
        if let Ok(v) = std::env::var("SUNDIAL_EXECUTOR_URL")
            && !v.trim().is_empty()
        {
            self.address = Some(v.trim().to_string());
        }
        self
    }
    /// An app secret (`whsec_…`); call again for each secret valid during a rotation.
    pub fn secret(mut self, secret: impl Into<String>) -> Self {
        self.secrets.push(secret.into());
        self
    }
    pub fn secrets<I: IntoIterator<Item = S>, S: Into<String>>(mut self, secrets: I) -> Self {
        self.secrets.extend(secrets.into_iter().map(Into::into));
        self
    }
    /// A Sundial node (`http://host:7700`); call again for more: any live one is used.
    pub fn scheduler_url(mut self, url: impl Into<String>) -> Self {
        self.urls.push(url.into());
        self
    }
    pub fn scheduler_urls<I: IntoIterator<Item = S>, S: Into<String>>(mut self, urls: I) -> Self {
        self.urls.extend(urls.into_iter().map(Into::into));
        self
    }
    pub fn app_id(mut self, app_id: impl Into<String>) -> Self {
        self.app_id = Some(app_id.into());
        self
    }
    /// The URL Sundial delivers to (default for [`Executor::serve`]: `http://<bound address>/`).
    pub fn address(mut self, address: impl Into<String>) -> Self {
        self.address = Some(address.into());
        self
    }
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
    pub fn tags<I: IntoIterator<Item = S>, S: Into<String>>(mut self, tags: I) -> Self {
        self.tags.extend(tags.into_iter().map(Into::into));
        self
    }
    pub fn metadata(mut self, metadata: Value) -> Self {
        self.metadata = Some(metadata);
        self
    }
    /// [`Mode::Auto`](crate::Mode::Auto): how long a handler may run before the answer is `202`
    /// (default 10 s).
    pub fn sync_budget(mut self, budget: Duration) -> Self {
        self.sync_budget = budget;
        self
    }
    /// How long answers are remembered per `webhook-id` (at least 10 minutes; default 15),
    /// and at most how many (default 10 000; the oldest finished ones are forgotten first).
    pub fn remember(mut self, ttl: Duration, max: usize) -> Self {
        self.remember = ttl.max(Duration::from_secs(600));
        self.remember_max = max.max(100);
        self
    }
    /// On shutdown, how long runs in progress may take to finish (default 30 s).
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }
    /// `false` for an executor listed as a static endpoint of its app (serverless): no
    /// registration, no heartbeats. Results and logs are still sent when a URL is given.
    pub fn register(mut self, register: bool) -> Self {
        self.register = register;
        self
    }

    /// Serve the handler `name`. `params` is the run's params as `P` (any `serde`
    /// `Deserialize`; `serde_json::Value` for untyped): params that do not match fail the run
    /// with `"retry": false` and a message naming the field. The output is any `Serialize`.
    pub fn handler<P, O, F, Fut>(self, name: &str, f: F) -> Self
    where
        P: DeserializeOwned + Send + 'static,
        O: Serialize + Send + 'static,
        F: Fn(Context, P) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, Error>> + Send + 'static,
    {
        self.handler_with(name, HandlerOptions::default(), f)
    }

    /// [`Builder::handler`] with a [`Mode`](crate::Mode) and time budget.
    pub fn handler_with<P, O, F, Fut>(mut self, name: &str, options: HandlerOptions, f: F) -> Self
    where
        P: DeserializeOwned + Send + 'static,
        O: Serialize + Send + 'static,
        F: Fn(Context, P) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, Error>> + Send + 'static,
    {
        self.handlers.insert(name.to_string(), HandlerEntry::typed(name, options, f));
        self
    }

    pub fn build(self) -> Result<Executor, ExecutorError> {
        if self.secrets.is_empty() {
            return Err(ExecutorError::NoSecret);
        }
        let keys = verify::parse_secrets(&self.secrets)?;
        let calls = match (&self.app_id, self.urls.is_empty()) {
            (Some(app), false) => Some(Arc::new(Calls::new(self.urls.clone(), app.clone(), keys.clone()))),
            _ => None,
        };
        Ok(Executor {
            inner: Arc::new(Inner {
                keys,
                calls,
                handlers: self.handlers,
                retired: Mutex::new(HashSet::new()),
                sync_budget: self.sync_budget,
                remember: self.remember,
                remember_max: self.remember_max,
                grace: self.grace,
                register: self.register,
                address: self.address,
                name: self.name,
                tags: self.tags,
                metadata: self.metadata,
                answers: Mutex::new(Answers::default()),
                running: Mutex::new(HashMap::new()),
                recent_cancels: Mutex::new(HashMap::new()),
                idle: Notify::new(),
                draining: AtomicBool::new(false),
                registration: Mutex::new(None),
                heartbeats: Mutex::new(None),
            }),
        })
    }
}

impl Executor {
    /// A [`Builder`] with the defaults.
    pub fn builder() -> Builder {
        Builder::default()
    }
}
