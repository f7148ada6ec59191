pub mod apps;
pub mod health;
pub mod jobs;
pub mod keys;
pub mod runs;
pub mod tenants;
