// @sundial/sdk: write a Sundial executor in a few lines, and drive Sundial from code.
export {
  Executor,
  type Answer,
  type AnswerMode,
  type CancelBody,
  type Context,
  type Delivery,
  type ExecutorOptions,
  type ExecutorRequest,
  type ExecutorResponse,
  type HandlerFn,
  type HandlerOptions,
  type LogLevel,
  type ParamsSchema,
  type ParentRun,
} from "./executor.js";
export { fetchHandler, listen, nodeHandler, type Listening, type ListenOptions } from "./adapters.js";
export { FailNoRetry, ParamsMismatchError, SundialApiError } from "./errors.js";
export {
  DEFAULT_TOLERANCE_SECS,
  header,
  newMessageId,
  sign,
  signatureHeader,
  signedHeaders,
  verify,
  WebhookVerificationError,
  type HeaderSource,
  type VerifyErrorCode,
  type VerifyOptions,
} from "./signing.js";
export { CallRefused, SchedulerUnavailable, type Logger } from "./calls.js";
export {
  SundialClient,
  unwrap,
  type ClientOptions,
  type components,
  type DataMethod,
  type operations,
  type PagedPath,
  type paths,
  type Schemas,
} from "./client.js";
