"""Sundial SDK: write an executor in a few lines, and drive Sundial from code.

    from sundial import Executor

    ex = Executor(secrets=["whsec_…"], scheduler_urls=["http://127.0.0.1:7700"], app_id="app_…")

    @ex.handler("hello")
    def hello(ctx):
        ctx.log(f"hello {ctx.params}")
        return {"greeted": ctx.params}

    ex.serve(port=9000, address="http://127.0.0.1:9000/")
"""
from .context import Context, Parent, ParentRun, Shard
from .errors import Fail, FailNoRetry, PayloadError
from .executor import PROTOCOL_VERSION, Defer, Executor, RegistrationError, Response
from .signing import SignatureError, sign, signature_header, verify

__version__ = "0.1.0"

__all__ = [
    "Executor", "Context", "Shard", "Parent", "ParentRun", "Defer", "Response", "Fail", "FailNoRetry",
    "PayloadError", "RegistrationError", "SignatureError", "sign", "signature_header", "verify",
    "PROTOCOL_VERSION", "__version__",
]
