"""Contains all the data models used in inputs/outputs"""

from .ack import Ack
from .answer import Answer
from .answer_code import AnswerCode
from .answer_status import AnswerStatus
from .app_create import AppCreate
from .app_list import AppList
from .app_out import AppOut
from .app_update import AppUpdate
from .app_with_secret import AppWithSecret
from .attempt_out import AttemptOut
from .backoff_kind import BackoffKind
from .backoff_spec import BackoffSpec
from .block_strategy import BlockStrategy
from .cancel import Cancel
from .chain_cancelled import ChainCancelled
from .chain_job_out import ChainJobOut
from .chain_link_out import ChainLinkOut
from .chain_out import ChainOut
from .chain_out_params_type_0 import ChainOutParamsType0
from .chain_run_out import ChainRunOut
from .chain_run_out_output_type_0 import ChainRunOutOutputType0
from .chain_state import ChainState
from .child_edge_out import ChildEdgeOut
from .child_input_type_1 import ChildInputType1
from .cron_schedule import CronSchedule
from .cron_schedule_kind import CronScheduleKind
from .delivery import Delivery
from .deregister_request import DeregisterRequest
from .edge_condition import EdgeCondition
from .error_body import ErrorBody
from .error_body_details import ErrorBodyDetails
from .executor_list import ExecutorList
from .executor_out import ExecutorOut
from .executor_out_metadata import ExecutorOutMetadata
from .executor_state import ExecutorState
from .failure_policy_kind import FailurePolicyKind
from .failure_spec import FailureSpec
from .fixed_rate_schedule import FixedRateSchedule
from .fixed_rate_schedule_kind import FixedRateScheduleKind
from .get_run_script_body import GetRunScriptBody
from .health import Health
from .heartbeat_request import HeartbeatRequest
from .heartbeat_request_metadata_type_0 import HeartbeatRequestMetadataType0
from .job_batch import JobBatch
from .job_batch_input import JobBatchInput
from .job_input import JobInput
from .job_input_params import JobInputParams
from .job_list import JobList
from .job_out import JobOut
from .job_out_params import JobOutParams
from .job_source import JobSource
from .job_state import JobState
from .key_create import KeyCreate
from .key_created import KeyCreated
from .key_list import KeyList
from .key_out import KeyOut
from .link_status import LinkStatus
from .log_line import LogLine
from .log_out import LogOut
from .logs_request import LogsRequest
from .manual_schedule import ManualSchedule
from .manual_schedule_kind import ManualScheduleKind
from .misfire_policy import MisfirePolicy
from .misfire_spec import MisfireSpec
from .node_list import NodeList
from .node_out import NodeOut
from .once_schedule import OnceSchedule
from .once_schedule_kind import OnceScheduleKind
from .parent_ref import ParentRef
from .parent_run import ParentRun
from .preview import Preview
from .quota import Quota
from .quota_overrides import QuotaOverrides
from .quota_usage import QuotaUsage
from .quotas import Quotas
from .register_request import RegisterRequest
from .register_request_metadata_type_0 import RegisterRequestMetadataType0
from .registered import Registered
from .result_accepted import ResultAccepted
from .result_request import ResultRequest
from .result_status import ResultStatus
from .role import Role
from .route import Route
from .run_detail import RunDetail
from .run_list import RunList
from .run_log_page import RunLogPage
from .run_out import RunOut
from .run_out_params_type_0 import RunOutParamsType0
from .run_script import RunScript
from .run_state import RunState
from .runtime_list import RuntimeList
from .runtime_offer import RuntimeOffer
from .schedule_preview_request import SchedulePreviewRequest
from .scheduling_settings import SchedulingSettings
from .script_create import ScriptCreate
from .script_diff import ScriptDiff
from .script_limits import ScriptLimits
from .script_list import ScriptList
from .script_out import ScriptOut
from .script_ref import ScriptRef
from .script_restore import ScriptRestore
from .script_runtime import ScriptRuntime
from .script_version_create import ScriptVersionCreate
from .script_version_list import ScriptVersionList
from .script_version_out import ScriptVersionOut
from .shard_out import ShardOut
from .shard_ref import ShardRef
from .tenant_create import TenantCreate
from .tenant_created import TenantCreated
from .tenant_list import TenantList
from .tenant_out import TenantOut
from .tenant_quotas import TenantQuotas
from .trigger_kind import TriggerKind
from .trigger_request import TriggerRequest
from .trigger_request_params_type_0 import TriggerRequestParamsType0
from .usage import Usage
from .wait_for import WaitFor

__all__ = (
    "Ack",
    "Answer",
    "AnswerCode",
    "AnswerStatus",
    "AppCreate",
    "AppList",
    "AppOut",
    "AppUpdate",
    "AppWithSecret",
    "AttemptOut",
    "BackoffKind",
    "BackoffSpec",
    "BlockStrategy",
    "Cancel",
    "ChainCancelled",
    "ChainJobOut",
    "ChainLinkOut",
    "ChainOut",
    "ChainOutParamsType0",
    "ChainRunOut",
    "ChainRunOutOutputType0",
    "ChainState",
    "ChildEdgeOut",
    "ChildInputType1",
    "CronSchedule",
    "CronScheduleKind",
    "Delivery",
    "DeregisterRequest",
    "EdgeCondition",
    "ErrorBody",
    "ErrorBodyDetails",
    "ExecutorList",
    "ExecutorOut",
    "ExecutorOutMetadata",
    "ExecutorState",
    "FailurePolicyKind",
    "FailureSpec",
    "FixedRateSchedule",
    "FixedRateScheduleKind",
    "GetRunScriptBody",
    "Health",
    "HeartbeatRequest",
    "HeartbeatRequestMetadataType0",
    "JobBatch",
    "JobBatchInput",
    "JobInput",
    "JobInputParams",
    "JobList",
    "JobOut",
    "JobOutParams",
    "JobSource",
    "JobState",
    "KeyCreate",
    "KeyCreated",
    "KeyList",
    "KeyOut",
    "LinkStatus",
    "LogLine",
    "LogOut",
    "LogsRequest",
    "ManualSchedule",
    "ManualScheduleKind",
    "MisfirePolicy",
    "MisfireSpec",
    "NodeList",
    "NodeOut",
    "OnceSchedule",
    "OnceScheduleKind",
    "ParentRef",
    "ParentRun",
    "Preview",
    "Quota",
    "QuotaOverrides",
    "Quotas",
    "QuotaUsage",
    "Registered",
    "RegisterRequest",
    "RegisterRequestMetadataType0",
    "ResultAccepted",
    "ResultRequest",
    "ResultStatus",
    "Role",
    "Route",
    "RunDetail",
    "RunList",
    "RunLogPage",
    "RunOut",
    "RunOutParamsType0",
    "RunScript",
    "RunState",
    "RuntimeList",
    "RuntimeOffer",
    "SchedulePreviewRequest",
    "SchedulingSettings",
    "ScriptCreate",
    "ScriptDiff",
    "ScriptLimits",
    "ScriptList",
    "ScriptOut",
    "ScriptRef",
    "ScriptRestore",
    "ScriptRuntime",
    "ScriptVersionCreate",
    "ScriptVersionList",
    "ScriptVersionOut",
    "ShardOut",
    "ShardRef",
    "TenantCreate",
    "TenantCreated",
    "TenantList",
    "TenantOut",
    "TenantQuotas",
    "TriggerKind",
    "TriggerRequest",
    "TriggerRequestParamsType0",
    "Usage",
    "WaitFor",
)
