use sundial_sdk::{Context, Executor};
#[rustfmt::skip] #[derive(serde::Deserialize)] struct Hello { to: String }
#[tokio::main]
async fn main() -> std::io::Result<()> {
    let ex = Executor::builder().from_env().handler("hello", |ctx: Context, p: Hello| async move {
        ctx.log(format!("hello {}", p.to));
        Ok(serde_json::json!({ "greeted": p.to }))
    });
    ex.build().expect("SUNDIAL_SECRET").serve(std::env::var("LISTEN_ADDR").unwrap_or("127.0.0.1:9000".into())).await
}
