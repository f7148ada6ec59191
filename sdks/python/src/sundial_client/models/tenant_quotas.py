from collections.abc import Mapping
from typing import Any, TypeVar, TYPE_CHECKING

from attrs import define as _attrs_define
from attrs import field as _attrs_field


if TYPE_CHECKING:
    from ..models.quota_overrides import QuotaOverrides
    from ..models.quotas import Quotas


T = TypeVar("T", bound="TenantQuotas")


@_attrs_define
class TenantQuotas:
    """A tenant's quotas: the limits in force, what the operator set, and the node's defaults.

    Attributes:
        defaults (Quotas): A tenant's limits, every one set: the node's defaults with the operator's overrides.
        effective (Quotas): A tenant's limits, every one set: the node's defaults with the operator's overrides.
        overrides (QuotaOverrides): The operator's settings for one tenant: `None` follows the node's default.
        tenant_id (str):
    """

    defaults: "Quotas"
    effective: "Quotas"
    overrides: "QuotaOverrides"
    tenant_id: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        defaults = self.defaults.to_dict()

        effective = self.effective.to_dict()

        overrides = self.overrides.to_dict()

        tenant_id = self.tenant_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "defaults": defaults,
                "effective": effective,
                "overrides": overrides,
                "tenant_id": tenant_id,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.quota_overrides import QuotaOverrides
        from ..models.quotas import Quotas

        d = dict(src_dict)
        defaults = Quotas.from_dict(d.pop("defaults"))

        effective = Quotas.from_dict(d.pop("effective"))

        overrides = QuotaOverrides.from_dict(d.pop("overrides"))

        tenant_id = d.pop("tenant_id")

        tenant_quotas = cls(
            defaults=defaults,
            effective=effective,
            overrides=overrides,
            tenant_id=tenant_id,
        )

        tenant_quotas.additional_properties = d
        return tenant_quotas

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
