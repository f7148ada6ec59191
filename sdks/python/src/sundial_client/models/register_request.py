from collections.abc import Mapping
from typing import Any, TypeVar, TYPE_CHECKING

from attrs import define as _attrs_define

from ..types import UNSET, Unset

from typing import cast
from typing import Union

if TYPE_CHECKING:
    from ..models.register_request_metadata_type_0 import RegisterRequestMetadataType0


T = TypeVar("T", bound="RegisterRequest")


@_attrs_define
class RegisterRequest:
    """
    Attributes:
        address (str): Where deliveries go (`http`/`https`).
        handlers (Union[Unset, list[str]]): Handler names this executor serves.
        metadata (Union['RegisterRequestMetadataType0', None, Unset]):
        name (Union[None, Unset, str]):
        runtimes (Union[Unset, list[str]]): Script runtimes this executor runs (`wasm`, `python`, `javascript`, `bash`,
            `sh`):
            a `sundial runner` lists them and receives the app's script jobs of those runtimes.
            A webhook executor leaves it empty and never receives a script run.
        tags (Union[None, Unset, list[str]]):
    """

    address: str
    handlers: Union[Unset, list[str]] = UNSET
    metadata: Union["RegisterRequestMetadataType0", None, Unset] = UNSET
    name: Union[None, Unset, str] = UNSET
    runtimes: Union[Unset, list[str]] = UNSET
    tags: Union[None, Unset, list[str]] = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.register_request_metadata_type_0 import (
            RegisterRequestMetadataType0,
        )

        address = self.address

        handlers: Union[Unset, list[str]] = UNSET
        if not isinstance(self.handlers, Unset):
            handlers = self.handlers

        metadata: Union[None, Unset, dict[str, Any]]
        if isinstance(self.metadata, Unset):
            metadata = UNSET
        elif isinstance(self.metadata, RegisterRequestMetadataType0):
            metadata = self.metadata.to_dict()
        else:
            metadata = self.metadata

        name: Union[None, Unset, str]
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        runtimes: Union[Unset, list[str]] = UNSET
        if not isinstance(self.runtimes, Unset):
            runtimes = self.runtimes

        tags: Union[None, Unset, list[str]]
        if isinstance(self.tags, Unset):
            tags = UNSET
        elif isinstance(self.tags, list):
            tags = self.tags

        else:
            tags = self.tags

        field_dict: dict[str, Any] = {}
        field_dict.update(
            {
                "address": address,
            }
        )
        if handlers is not UNSET:
            field_dict["handlers"] = handlers
        if metadata is not UNSET:
            field_dict["metadata"] = metadata
        if name is not UNSET:
            field_dict["name"] = name
        if runtimes is not UNSET:
            field_dict["runtimes"] = runtimes
        if tags is not UNSET:
            field_dict["tags"] = tags

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.register_request_metadata_type_0 import (
            RegisterRequestMetadataType0,
        )

        d = dict(src_dict)
        address = d.pop("address")

        handlers = cast(list[str], d.pop("handlers", UNSET))

        def _parse_metadata(
            data: object,
        ) -> Union["RegisterRequestMetadataType0", None, Unset]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                metadata_type_0 = RegisterRequestMetadataType0.from_dict(data)

                return metadata_type_0
            except:  # noqa: E722
                pass
            return cast(Union["RegisterRequestMetadataType0", None, Unset], data)

        metadata = _parse_metadata(d.pop("metadata", UNSET))

        def _parse_name(data: object) -> Union[None, Unset, str]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, str], data)

        name = _parse_name(d.pop("name", UNSET))

        runtimes = cast(list[str], d.pop("runtimes", UNSET))

        def _parse_tags(data: object) -> Union[None, Unset, list[str]]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                tags_type_0 = cast(list[str], data)

                return tags_type_0
            except:  # noqa: E722
                pass
            return cast(Union[None, Unset, list[str]], data)

        tags = _parse_tags(d.pop("tags", UNSET))

        register_request = cls(
            address=address,
            handlers=handlers,
            metadata=metadata,
            name=name,
            runtimes=runtimes,
            tags=tags,
        )

        return register_request
