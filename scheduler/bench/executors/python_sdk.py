"""The benchmark's Python executor through the SDK: its ASGI app under uvicorn (one process)."""
import os

import uvicorn
from sundial import Executor
from sundial.asgi import asgi_app

ex = Executor(secrets=[os.environ["SUNDIAL_SECRET"]])


@ex.handler("hello")
def hello(ctx):
    return {"greeted": ctx.params["to"]}


uvicorn.run(asgi_app(ex, lifespan=False), host="127.0.0.1", port=int(os.environ["PORT"]),
            log_level="warning", access_log=False, lifespan="off")
