from http import HTTPStatus
from typing import Any, Optional, Union

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...models.preview import Preview
from ...types import Unset


def _get_kwargs(
    id: str,
    *,
    count: Union[None, Unset, int] = UNSET,
) -> dict[str, Any]:
    params: dict[str, Any] = {}

    json_count: Union[None, Unset, int]
    if isinstance(count, Unset):
        json_count = UNSET
    else:
        json_count = count
    params["count"] = json_count

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/jobs/{id}/preview".format(
            id=id,
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: Union[AuthenticatedClient, Client], response: httpx.Response
) -> Optional[Union[ErrorBody, Preview]]:
    if response.status_code == 200:
        response_200 = Preview.from_dict(response.json())

        return response_200
    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())

        return response_401
    if response.status_code == 404:
        response_404 = ErrorBody.from_dict(response.json())

        return response_404
    if response.status_code == 422:
        response_422 = ErrorBody.from_dict(response.json())

        return response_422
    if response.status_code == 429:
        response_429 = ErrorBody.from_dict(response.json())

        return response_429
    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: Union[AuthenticatedClient, Client], response: httpx.Response
) -> Response[Union[ErrorBody, Preview]]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    id: str,
    *,
    client: Union[AuthenticatedClient, Client],
    count: Union[None, Unset, int] = UNSET,
) -> Response[Union[ErrorBody, Preview]]:
    """The job's next fire times from now.

    Args:
        id (str):
        count (Union[None, Unset, int]):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Union[ErrorBody, Preview]]
    """

    kwargs = _get_kwargs(
        id=id,
        count=count,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: str,
    *,
    client: Union[AuthenticatedClient, Client],
    count: Union[None, Unset, int] = UNSET,
) -> Optional[Union[ErrorBody, Preview]]:
    """The job's next fire times from now.

    Args:
        id (str):
        count (Union[None, Unset, int]):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Union[ErrorBody, Preview]
    """

    return sync_detailed(
        id=id,
        client=client,
        count=count,
    ).parsed


async def asyncio_detailed(
    id: str,
    *,
    client: Union[AuthenticatedClient, Client],
    count: Union[None, Unset, int] = UNSET,
) -> Response[Union[ErrorBody, Preview]]:
    """The job's next fire times from now.

    Args:
        id (str):
        count (Union[None, Unset, int]):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Union[ErrorBody, Preview]]
    """

    kwargs = _get_kwargs(
        id=id,
        count=count,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: str,
    *,
    client: Union[AuthenticatedClient, Client],
    count: Union[None, Unset, int] = UNSET,
) -> Optional[Union[ErrorBody, Preview]]:
    """The job's next fire times from now.

    Args:
        id (str):
        count (Union[None, Unset, int]):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Union[ErrorBody, Preview]
    """

    return (
        await asyncio_detailed(
            id=id,
            client=client,
            count=count,
        )
    ).parsed
