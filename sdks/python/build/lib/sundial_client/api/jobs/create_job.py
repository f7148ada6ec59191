from http import HTTPStatus
from typing import Any, Optional, Union

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response
from ... import errors

from ...models.error_body import ErrorBody
from ...models.job_input import JobInput
from ...models.job_out import JobOut


def _get_kwargs(
    *,
    body: JobInput,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/jobs",
    }

    _body = body.to_dict()

    _kwargs["json"] = _body
    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: Union[AuthenticatedClient, Client], response: httpx.Response
) -> Optional[Union[ErrorBody, JobOut]]:
    if response.status_code == 201:
        response_201 = JobOut.from_dict(response.json())

        return response_201
    if response.status_code == 400:
        response_400 = ErrorBody.from_dict(response.json())

        return response_400
    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())

        return response_401
    if response.status_code == 403:
        response_403 = ErrorBody.from_dict(response.json())

        return response_403
    if response.status_code == 409:
        response_409 = ErrorBody.from_dict(response.json())

        return response_409
    if response.status_code == 413:
        response_413 = ErrorBody.from_dict(response.json())

        return response_413
    if response.status_code == 415:
        response_415 = ErrorBody.from_dict(response.json())

        return response_415
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
) -> Response[Union[ErrorBody, JobOut]]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: Union[AuthenticatedClient, Client],
    body: JobInput,
) -> Response[Union[ErrorBody, JobOut]]:
    """Create a job (editor). Refused with 409 `quota_exceeded` beyond the tenant's `max_jobs`,
    or when its schedule's peak fires per second would take the tenant's active jobs past
    `max_fires_per_second` (a fixed rate counts `1000 / every_ms`, a cron the seconds of a
    minute it may fire over 60, one-shot and manual jobs nothing).

    Args:
        body (JobInput): A job as sent to `POST /api/v1/jobs` and `PUT /api/v1/jobs/{id}`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Union[ErrorBody, JobOut]]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: Union[AuthenticatedClient, Client],
    body: JobInput,
) -> Optional[Union[ErrorBody, JobOut]]:
    """Create a job (editor). Refused with 409 `quota_exceeded` beyond the tenant's `max_jobs`,
    or when its schedule's peak fires per second would take the tenant's active jobs past
    `max_fires_per_second` (a fixed rate counts `1000 / every_ms`, a cron the seconds of a
    minute it may fire over 60, one-shot and manual jobs nothing).

    Args:
        body (JobInput): A job as sent to `POST /api/v1/jobs` and `PUT /api/v1/jobs/{id}`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Union[ErrorBody, JobOut]
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: Union[AuthenticatedClient, Client],
    body: JobInput,
) -> Response[Union[ErrorBody, JobOut]]:
    """Create a job (editor). Refused with 409 `quota_exceeded` beyond the tenant's `max_jobs`,
    or when its schedule's peak fires per second would take the tenant's active jobs past
    `max_fires_per_second` (a fixed rate counts `1000 / every_ms`, a cron the seconds of a
    minute it may fire over 60, one-shot and manual jobs nothing).

    Args:
        body (JobInput): A job as sent to `POST /api/v1/jobs` and `PUT /api/v1/jobs/{id}`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Union[ErrorBody, JobOut]]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: Union[AuthenticatedClient, Client],
    body: JobInput,
) -> Optional[Union[ErrorBody, JobOut]]:
    """Create a job (editor). Refused with 409 `quota_exceeded` beyond the tenant's `max_jobs`,
    or when its schedule's peak fires per second would take the tenant's active jobs past
    `max_fires_per_second` (a fixed rate counts `1000 / every_ms`, a cron the seconds of a
    minute it may fire over 60, one-shot and manual jobs nothing).

    Args:
        body (JobInput): A job as sent to `POST /api/v1/jobs` and `PUT /api/v1/jobs/{id}`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Union[ErrorBody, JobOut]
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
