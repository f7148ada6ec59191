from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

from typing import cast, Union


T = TypeVar("T", bound="ScriptCreate")


@_attrs_define
class ScriptCreate:
    r"""
    Example:
        {'name': 'nightly-report', 'note': 'first cut', 'runtime': 'python', 'source': "print('hello from Sundial')\n"}

    Attributes:
        name (str): Unique within the tenant; letters, digits, `-`, `_`, `.`.
        runtime (str): `wasm` (a WASI preview-1 module), `python` or `javascript` (run inside WebAssembly), `bash` or
            `sh` (run in an OS sandbox).
        note (Union[None, Unset, str]): What this version is (up to 2,000 characters).
        source (Union[None, Unset, str]): The code as text: Python, JavaScript, shell, or a `wasm` module in `.wat`
            text. Exactly one of `source` and `source_base64`.
        source_base64 (Union[None, Unset, str]): A `wasm` module's binary, standard base64.
    """

    name: str
    runtime: str
    note: Union[None, Unset, str] = UNSET
    source: Union[None, Unset, str] = UNSET
    source_base64: Union[None, Unset, str] = UNSET

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        runtime = self.runtime

        note: Union[None, Unset, str]
        if isinstance(self.note, Unset):
            note = UNSET
        else:
            note = self.note

        source: Union[None, Unset, str]
        if isinstance(self.source, Unset):
            source = UNSET
        else:
            source = self.source

        source_base64: Union[None, Unset, str]
        if isinstance(self.source_base64, Unset):
            source_base64 = UNSET
        else:
            source_base64 = self.source_base64

        field_dict: dict[str, Any] = {}
        field_dict.update(
            {
                "name": name,
                "runtime": runtime,
            }
        )
        if note is not UNSET:
            field_dict["note"] = note
        if source is not UNSET:
            field_dict["source"] = source
        if source_base64 is not UNSET:
            field_dict["source_base64"] = source_base64

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = d.pop("name")

        runtime = d.pop("runtime")

        def _parse_note(data: object) -> Union[None, Unset, str]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, str], data)

        note = _parse_note(d.pop("note", UNSET))

        def _parse_source(data: object) -> Union[None, Unset, str]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, str], data)

        source = _parse_source(d.pop("source", UNSET))

        def _parse_source_base64(data: object) -> Union[None, Unset, str]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, str], data)

        source_base64 = _parse_source_base64(d.pop("source_base64", UNSET))

        script_create = cls(
            name=name,
            runtime=runtime,
            note=note,
            source=source,
            source_base64=source_base64,
        )

        return script_create
