from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field


from ..models.script_runtime import ScriptRuntime


T = TypeVar("T", bound="RunScript")


@_attrs_define
class RunScript:
    """The source a runner runs for a run of a script job.

    Attributes:
        encoding (str): `text`, or `base64` for a WebAssembly binary.
        name (str):
        run_id (str):
        runtime (ScriptRuntime): The language of a script: a WASI module, Python or JavaScript run inside WebAssembly,
            or a shell script run in an OS sandbox.
        script_id (str):
        sha256 (str): SHA-256 of the source's bytes (decoded for `base64`), lower-case hex.
        source (str):
        version (int): The version the run's latest attempt runs (as in its delivery's `script.version`).
    """

    encoding: str
    name: str
    run_id: str
    runtime: ScriptRuntime
    script_id: str
    sha256: str
    source: str
    version: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        encoding = self.encoding

        name = self.name

        run_id = self.run_id

        runtime = self.runtime.value

        script_id = self.script_id

        sha256 = self.sha256

        source = self.source

        version = self.version

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "encoding": encoding,
                "name": name,
                "run_id": run_id,
                "runtime": runtime,
                "script_id": script_id,
                "sha256": sha256,
                "source": source,
                "version": version,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        encoding = d.pop("encoding")

        name = d.pop("name")

        run_id = d.pop("run_id")

        runtime = ScriptRuntime(d.pop("runtime"))

        script_id = d.pop("script_id")

        sha256 = d.pop("sha256")

        source = d.pop("source")

        version = d.pop("version")

        run_script = cls(
            encoding=encoding,
            name=name,
            run_id=run_id,
            runtime=runtime,
            script_id=script_id,
            sha256=sha256,
            source=source,
            version=version,
        )

        run_script.additional_properties = d
        return run_script

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
