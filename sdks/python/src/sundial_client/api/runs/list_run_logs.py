from http import HTTPStatus
from typing import Any, Optional, Union

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...models.run_log_page import RunLogPage
from ...types import Unset


def _get_kwargs(
    id: str,
    *,
    after: Union[None, Unset, int] = UNSET,
    limit: Union[None, Unset, int] = UNSET,
) -> dict[str, Any]:
    params: dict[str, Any] = {}

    json_after: Union[None, Unset, int]
    if isinstance(after, Unset):
        json_after = UNSET
    else:
        json_after = after
    params["after"] = json_after

    json_limit: Union[None, Unset, int]
    if isinstance(limit, Unset):
        json_limit = UNSET
    else:
        json_limit = limit
    params["limit"] = json_limit

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/runs/{id}/logs".format(
            id=id,
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: Union[AuthenticatedClient, Client], response: httpx.Response
) -> Optional[Union[ErrorBody, RunLogPage]]:
    if response.status_code == 200:
        response_200 = RunLogPage.from_dict(response.json())

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
) -> Response[Union[ErrorBody, RunLogPage]]:
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
    after: Union[None, Unset, int] = UNSET,
    limit: Union[None, Unset, int] = UNSET,
) -> Response[Union[ErrorBody, RunLogPage]]:
    """A run's log lines after `after` (a line's `seq`), oldest first, with the run's state:
    read a whole log page by page, or follow a run as it goes (poll with `next_after` until
    `run_finished` and not `has_more`). Any role of the run's tenant.

    Args:
        id (str):
        after (Union[None, Unset, int]):
        limit (Union[None, Unset, int]):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Union[ErrorBody, RunLogPage]]
    """

    kwargs = _get_kwargs(
        id=id,
        after=after,
        limit=limit,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: str,
    *,
    client: Union[AuthenticatedClient, Client],
    after: Union[None, Unset, int] = UNSET,
    limit: Union[None, Unset, int] = UNSET,
) -> Optional[Union[ErrorBody, RunLogPage]]:
    """A run's log lines after `after` (a line's `seq`), oldest first, with the run's state:
    read a whole log page by page, or follow a run as it goes (poll with `next_after` until
    `run_finished` and not `has_more`). Any role of the run's tenant.

    Args:
        id (str):
        after (Union[None, Unset, int]):
        limit (Union[None, Unset, int]):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Union[ErrorBody, RunLogPage]
    """

    return sync_detailed(
        id=id,
        client=client,
        after=after,
        limit=limit,
    ).parsed


async def asyncio_detailed(
    id: str,
    *,
    client: Union[AuthenticatedClient, Client],
    after: Union[None, Unset, int] = UNSET,
    limit: Union[None, Unset, int] = UNSET,
) -> Response[Union[ErrorBody, RunLogPage]]:
    """A run's log lines after `after` (a line's `seq`), oldest first, with the run's state:
    read a whole log page by page, or follow a run as it goes (poll with `next_after` until
    `run_finished` and not `has_more`). Any role of the run's tenant.

    Args:
        id (str):
        after (Union[None, Unset, int]):
        limit (Union[None, Unset, int]):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Union[ErrorBody, RunLogPage]]
    """

    kwargs = _get_kwargs(
        id=id,
        after=after,
        limit=limit,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: str,
    *,
    client: Union[AuthenticatedClient, Client],
    after: Union[None, Unset, int] = UNSET,
    limit: Union[None, Unset, int] = UNSET,
) -> Optional[Union[ErrorBody, RunLogPage]]:
    """A run's log lines after `after` (a line's `seq`), oldest first, with the run's state:
    read a whole log page by page, or follow a run as it goes (poll with `next_after` until
    `run_finished` and not `has_more`). Any role of the run's tenant.

    Args:
        id (str):
        after (Union[None, Unset, int]):
        limit (Union[None, Unset, int]):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Union[ErrorBody, RunLogPage]
    """

    return (
        await asyncio_detailed(
            id=id,
            client=client,
            after=after,
            limit=limit,
        )
    ).parsed
