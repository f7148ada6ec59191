from enum import Enum


class Quota(str, Enum):
    MAX_API_REQUESTS_PER_SECOND = "max_api_requests_per_second"
    MAX_FIRES_PER_SECOND = "max_fires_per_second"
    MAX_HANDLERS_PER_APP = "max_handlers_per_app"
    MAX_INFLIGHT = "max_inflight"
    MAX_JOBS = "max_jobs"
    MAX_LOG_BYTES_PER_DAY = "max_log_bytes_per_day"
    MAX_LOG_BYTES_PER_RUN = "max_log_bytes_per_run"
    MAX_SCRIPTS = "max_scripts"
    MAX_SCRIPT_BYTES = "max_script_bytes"

    def __str__(self) -> str:
        return str(self.value)
