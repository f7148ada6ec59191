pub mod apps;
pub mod executors;
pub mod health;
pub mod jobs;
pub mod keys;
pub mod runs;
pub mod settings;
pub mod tenants;
