from http import HTTPStatus
from typing import Any, Optional, Union

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...models.run_list import RunList
from ...models.run_state import RunState
from ...types import Unset
import datetime


def _get_kwargs(
    *,
    job_id: Union[None, Unset, str] = UNSET,
    chain_id: Union[None, Unset, str] = UNSET,
    state: Union[None, RunState, Unset] = UNSET,
    from_: Union[None, Unset, datetime.datetime] = UNSET,
    to: Union[None, Unset, datetime.datetime] = UNSET,
    limit: Union[None, Unset, int] = UNSET,
    cursor: Union[None, Unset, str] = UNSET,
) -> dict[str, Any]:
    params: dict[str, Any] = {}

    json_job_id: Union[None, Unset, str]
    if isinstance(job_id, Unset):
        json_job_id = UNSET
    else:
        json_job_id = job_id
    params["job_id"] = json_job_id

    json_chain_id: Union[None, Unset, str]
    if isinstance(chain_id, Unset):
        json_chain_id = UNSET
    else:
        json_chain_id = chain_id
    params["chain_id"] = json_chain_id

    json_state: Union[None, Unset, str]
    if isinstance(state, Unset):
        json_state = UNSET
    elif isinstance(state, RunState):
        json_state = state.value
    else:
        json_state = state
    params["state"] = json_state

    json_from_: Union[None, Unset, str]
    if isinstance(from_, Unset):
        json_from_ = UNSET
    elif isinstance(from_, datetime.datetime):
        json_from_ = from_.isoformat()
    else:
        json_from_ = from_
    params["from"] = json_from_

    json_to: Union[None, Unset, str]
    if isinstance(to, Unset):
        json_to = UNSET
    elif isinstance(to, datetime.datetime):
        json_to = to.isoformat()
    else:
        json_to = to
    params["to"] = json_to

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
        "url": "/api/v1/runs",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: Union[AuthenticatedClient, Client], response: httpx.Response
) -> Optional[Union[ErrorBody, RunList]]:
    if response.status_code == 200:
        response_200 = RunList.from_dict(response.json())

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
) -> Response[Union[ErrorBody, RunList]]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: Union[AuthenticatedClient, Client],
    job_id: Union[None, Unset, str] = UNSET,
    chain_id: Union[None, Unset, str] = UNSET,
    state: Union[None, RunState, Unset] = UNSET,
    from_: Union[None, Unset, datetime.datetime] = UNSET,
    to: Union[None, Unset, datetime.datetime] = UNSET,
    limit: Union[None, Unset, int] = UNSET,
    cursor: Union[None, Unset, str] = UNSET,
) -> Response[Union[ErrorBody, RunList]]:
    """List runs, newest scheduled first, filtered by job, state and scheduled time; or the runs
    of one chain (`chain_id`), oldest first.

    Args:
        job_id (Union[None, Unset, str]):
        chain_id (Union[None, Unset, str]):
        state (Union[None, RunState, Unset]):
        from_ (Union[None, Unset, datetime.datetime]):
        to (Union[None, Unset, datetime.datetime]):
        limit (Union[None, Unset, int]):
        cursor (Union[None, Unset, str]):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Union[ErrorBody, RunList]]
    """

    kwargs = _get_kwargs(
        job_id=job_id,
        chain_id=chain_id,
        state=state,
        from_=from_,
        to=to,
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
    job_id: Union[None, Unset, str] = UNSET,
    chain_id: Union[None, Unset, str] = UNSET,
    state: Union[None, RunState, Unset] = UNSET,
    from_: Union[None, Unset, datetime.datetime] = UNSET,
    to: Union[None, Unset, datetime.datetime] = UNSET,
    limit: Union[None, Unset, int] = UNSET,
    cursor: Union[None, Unset, str] = UNSET,
) -> Optional[Union[ErrorBody, RunList]]:
    """List runs, newest scheduled first, filtered by job, state and scheduled time; or the runs
    of one chain (`chain_id`), oldest first.

    Args:
        job_id (Union[None, Unset, str]):
        chain_id (Union[None, Unset, str]):
        state (Union[None, RunState, Unset]):
        from_ (Union[None, Unset, datetime.datetime]):
        to (Union[None, Unset, datetime.datetime]):
        limit (Union[None, Unset, int]):
        cursor (Union[None, Unset, str]):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Union[ErrorBody, RunList]
    """

    return sync_detailed(
        client=client,
        job_id=job_id,
        chain_id=chain_id,
        state=state,
        from_=from_,
        to=to,
        limit=limit,
        cursor=cursor,
    ).parsed


async def asyncio_detailed(
    *,
    client: Union[AuthenticatedClient, Client],
    job_id: Union[None, Unset, str] = UNSET,
    chain_id: Union[None, Unset, str] = UNSET,
    state: Union[None, RunState, Unset] = UNSET,
    from_: Union[None, Unset, datetime.datetime] = UNSET,
    to: Union[None, Unset, datetime.datetime] = UNSET,
    limit: Union[None, Unset, int] = UNSET,
    cursor: Union[None, Unset, str] = UNSET,
) -> Response[Union[ErrorBody, RunList]]:
    """List runs, newest scheduled first, filtered by job, state and scheduled time; or the runs
    of one chain (`chain_id`), oldest first.

    Args:
        job_id (Union[None, Unset, str]):
        chain_id (Union[None, Unset, str]):
        state (Union[None, RunState, Unset]):
        from_ (Union[None, Unset, datetime.datetime]):
        to (Union[None, Unset, datetime.datetime]):
        limit (Union[None, Unset, int]):
        cursor (Union[None, Unset, str]):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Union[ErrorBody, RunList]]
    """

    kwargs = _get_kwargs(
        job_id=job_id,
        chain_id=chain_id,
        state=state,
        from_=from_,
        to=to,
        limit=limit,
        cursor=cursor,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: Union[AuthenticatedClient, Client],
    job_id: Union[None, Unset, str] = UNSET,
    chain_id: Union[None, Unset, str] = UNSET,
    state: Union[None, RunState, Unset] = UNSET,
    from_: Union[None, Unset, datetime.datetime] = UNSET,
    to: Union[None, Unset, datetime.datetime] = UNSET,
    limit: Union[None, Unset, int] = UNSET,
    cursor: Union[None, Unset, str] = UNSET,
) -> Optional[Union[ErrorBody, RunList]]:
    """List runs, newest scheduled first, filtered by job, state and scheduled time; or the runs
    of one chain (`chain_id`), oldest first.

    Args:
        job_id (Union[None, Unset, str]):
        chain_id (Union[None, Unset, str]):
        state (Union[None, RunState, Unset]):
        from_ (Union[None, Unset, datetime.datetime]):
        to (Union[None, Unset, datetime.datetime]):
        limit (Union[None, Unset, int]):
        cursor (Union[None, Unset, str]):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Union[ErrorBody, RunList]
    """

    return (
        await asyncio_detailed(
            client=client,
            job_id=job_id,
            chain_id=chain_id,
            state=state,
            from_=from_,
            to=to,
            limit=limit,
            cursor=cursor,
        )
    ).parsed
