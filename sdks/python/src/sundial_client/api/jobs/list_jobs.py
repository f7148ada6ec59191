from http import HTTPStatus
from typing import Any, Optional, Union

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...models.job_list import JobList
from ...models.job_state import JobState
from ...types import Unset


def _get_kwargs(
    *,
    app: Union[None, Unset, str] = UNSET,
    state: Union[JobState, None, Unset] = UNSET,
    name: Union[None, Unset, str] = UNSET,
    limit: Union[None, Unset, int] = UNSET,
    cursor: Union[None, Unset, str] = UNSET,
) -> dict[str, Any]:
    params: dict[str, Any] = {}

    json_app: Union[None, Unset, str]
    if isinstance(app, Unset):
        json_app = UNSET
    else:
        json_app = app
    params["app"] = json_app

    json_state: Union[None, Unset, str]
    if isinstance(state, Unset):
        json_state = UNSET
    elif isinstance(state, JobState):
        json_state = state.value
    else:
        json_state = state
    params["state"] = json_state

    json_name: Union[None, Unset, str]
    if isinstance(name, Unset):
        json_name = UNSET
    else:
        json_name = name
    params["name"] = json_name

    json_limit: Union[None, Unset, int]
    if isinstance(limit, Unset):
        json_limit = UNSET
    else:
        json_limit = limit
    params["limit"] = json_limit

    json_cursor: Union[None, Unset, str]
    if isinstance(cursor, Unset):
        json_cursor = UNSET
    else:
        json_cursor = cursor
    params["cursor"] = json_cursor

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/jobs",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: Union[AuthenticatedClient, Client], response: httpx.Response
) -> Optional[Union[ErrorBody, JobList]]:
    if response.status_code == 200:
        response_200 = JobList.from_dict(response.json())

        return response_200
    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())

        return response_401
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
) -> Response[Union[ErrorBody, JobList]]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: Union[AuthenticatedClient, Client],
    app: Union[None, Unset, str] = UNSET,
    state: Union[JobState, None, Unset] = UNSET,
    name: Union[None, Unset, str] = UNSET,
    limit: Union[None, Unset, int] = UNSET,
    cursor: Union[None, Unset, str] = UNSET,
) -> Response[Union[ErrorBody, JobList]]:
    """List jobs, filtered by app, state or name.

    Args:
        app (Union[None, Unset, str]):
        state (Union[JobState, None, Unset]):
        name (Union[None, Unset, str]):
        limit (Union[None, Unset, int]):
        cursor (Union[None, Unset, str]):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Union[ErrorBody, JobList]]
    """

    kwargs = _get_kwargs(
        app=app,
        state=state,
        name=name,
        limit=limit,
        cursor=cursor,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: Union[AuthenticatedClient, Client],
    app: Union[None, Unset, str] = UNSET,
    state: Union[JobState, None, Unset] = UNSET,
    name: Union[None, Unset, str] = UNSET,
    limit: Union[None, Unset, int] = UNSET,
    cursor: Union[None, Unset, str] = UNSET,
) -> Optional[Union[ErrorBody, JobList]]:
    """List jobs, filtered by app, state or name.

    Args:
        app (Union[None, Unset, str]):
        state (Union[JobState, None, Unset]):
        name (Union[None, Unset, str]):
        limit (Union[None, Unset, int]):
        cursor (Union[None, Unset, str]):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Union[ErrorBody, JobList]
    """

    return sync_detailed(
        client=client,
        app=app,
        state=state,
        name=name,
        limit=limit,
        cursor=cursor,
    ).parsed


async def asyncio_detailed(
    *,
    client: Union[AuthenticatedClient, Client],
    app: Union[None, Unset, str] = UNSET,
    state: Union[JobState, None, Unset] = UNSET,
    name: Union[None, Unset, str] = UNSET,
    limit: Union[None, Unset, int] = UNSET,
    cursor: Union[None, Unset, str] = UNSET,
) -> Response[Union[ErrorBody, JobList]]:
    """List jobs, filtered by app, state or name.

    Args:
        app (Union[None, Unset, str]):
        state (Union[JobState, None, Unset]):
        name (Union[None, Unset, str]):
        limit (Union[None, Unset, int]):
        cursor (Union[None, Unset, str]):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Union[ErrorBody, JobList]]
    """

    kwargs = _get_kwargs(
        app=app,
        state=state,
        name=name,
        limit=limit,
        cursor=cursor,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: Union[AuthenticatedClient, Client],
    app: Union[None, Unset, str] = UNSET,
    state: Union[JobState, None, Unset] = UNSET,
    name: Union[None, Unset, str] = UNSET,
    limit: Union[None, Unset, int] = UNSET,
    cursor: Union[None, Unset, str] = UNSET,
) -> Optional[Union[ErrorBody, JobList]]:
    """List jobs, filtered by app, state or name.

    Args:
        app (Union[None, Unset, str]):
        state (Union[JobState, None, Unset]):
        name (Union[None, Unset, str]):
        limit (Union[None, Unset, int]):
        cursor (Union[None, Unset, str]):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Union[ErrorBody, JobList]
    """

    return (
        await asyncio_detailed(
            client=client,
            app=app,
            state=state,
            name=name,
            limit=limit,
            cursor=cursor,
        )
    ).parsed
