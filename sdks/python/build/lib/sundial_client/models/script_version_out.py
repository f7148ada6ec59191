from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from dateutil.parser import isoparse
from typing import cast
from typing import Union
import datetime


T = TypeVar("T", bound="ScriptVersionOut")


@_attrs_define
class ScriptVersionOut:
    """
    Attributes:
        author (str): The id of the API key that uploaded it.
        created_at (datetime.datetime):
        encoding (str): `text` or `base64`.
        note (str):
        sha256 (str): SHA-256 of the source's bytes (for `base64`, of the decoded binary), lower-case hex.
        size_bytes (int):
        version (int):
        source (Union[None, Unset, str]): The source (shown when one version is asked for; absent in lists).
    """

    author: str
    created_at: datetime.datetime
    encoding: str
    note: str
    sha256: str
    size_bytes: int
    version: int
    source: Union[None, Unset, str] = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        author = self.author

        created_at = self.created_at.isoformat()

        encoding = self.encoding

        note = self.note

        sha256 = self.sha256

        size_bytes = self.size_bytes

        version = self.version

        source: Union[None, Unset, str]
        if isinstance(self.source, Unset):
            source = UNSET
        else:
            source = self.source

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "author": author,
                "created_at": created_at,
                "encoding": encoding,
                "note": note,
                "sha256": sha256,
                "size_bytes": size_bytes,
                "version": version,
            }
        )
        if source is not UNSET:
            field_dict["source"] = source

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        author = d.pop("author")

        created_at = isoparse(d.pop("created_at"))

        encoding = d.pop("encoding")

        note = d.pop("note")

        sha256 = d.pop("sha256")

        size_bytes = d.pop("size_bytes")

        version = d.pop("version")

        def _parse_source(data: object) -> Union[None, Unset, str]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, str], data)

        source = _parse_source(d.pop("source", UNSET))

        script_version_out = cls(
            author=author,
            created_at=created_at,
            encoding=encoding,
            note=note,
            sha256=sha256,
            size_bytes=size_bytes,
            version=version,
            source=source,
        )

        script_version_out.additional_properties = d
        return script_version_out

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
