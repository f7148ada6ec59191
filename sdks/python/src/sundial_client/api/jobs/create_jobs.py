from http import HTTPStatus
from typing import Any, Optional, Union

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response
from ... import errors

from ...models.error_body import ErrorBody
from ...models.job_batch import JobBatch
from ...models.job_batch_input import JobBatchInput


def _get_kwargs(
    *,
    body: JobBatchInput,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/jobs/batch",
    }

    _body = body.to_dict()

    _kwargs["json"] = _body
    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: Union[AuthenticatedClient, Client], response: httpx.Response
) -> Optional[Union[ErrorBody, JobBatch]]:
    if response.status_code == 201:
        response_201 = JobBatch.from_dict(response.json())

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
) -> Response[Union[ErrorBody, JobBatch]]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: Union[AuthenticatedClient, Client],
    body: JobBatchInput,
) -> Response[Union[ErrorBody, JobBatch]]:
    """Create up to 1,000 jobs at once (editor), all or none. Each item is what `POST
    /api/v1/jobs` takes, checked as it checks it (with the same defaults), and the answer lists
    the created jobs in the request's order, each as that call returns it. If any item is
    refused nothing is created: 422 `invalid_field` (409 `conflict` when every refused item's
    name is taken, in the tenant or by an earlier item) with `details.field` = `jobs` and
    `details.errors`, one `{index, field, code, message}` per refused item (`index` into
    `jobs`; `field`, `code` and `message` as the single create names them, e.g. `field` =
    `schedule.expression`). No item or more than 1,000: 400 on `jobs`. Quotas count the whole
    batch (409 `quota_exceeded`); the body limit (`max_body_bytes`) applies to the whole body.

    Args:
        body (JobBatchInput): `POST /api/v1/jobs/batch`: the jobs to create, each exactly a `POST
            /api/v1/jobs` body.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Union[ErrorBody, JobBatch]]
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
    body: JobBatchInput,
) -> Optional[Union[ErrorBody, JobBatch]]:
    """Create up to 1,000 jobs at once (editor), all or none. Each item is what `POST
    /api/v1/jobs` takes, checked as it checks it (with the same defaults), and the answer lists
    the created jobs in the request's order, each as that call returns it. If any item is
    refused nothing is created: 422 `invalid_field` (409 `conflict` when every refused item's
    name is taken, in the tenant or by an earlier item) with `details.field` = `jobs` and
    `details.errors`, one `{index, field, code, message}` per refused item (`index` into
    `jobs`; `field`, `code` and `message` as the single create names them, e.g. `field` =
    `schedule.expression`). No item or more than 1,000: 400 on `jobs`. Quotas count the whole
    batch (409 `quota_exceeded`); the body limit (`max_body_bytes`) applies to the whole body.

    Args:
        body (JobBatchInput): `POST /api/v1/jobs/batch`: the jobs to create, each exactly a `POST
            /api/v1/jobs` body.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Union[ErrorBody, JobBatch]
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: Union[AuthenticatedClient, Client],
    body: JobBatchInput,
) -> Response[Union[ErrorBody, JobBatch]]:
    """Create up to 1,000 jobs at once (editor), all or none. Each item is what `POST
    /api/v1/jobs` takes, checked as it checks it (with the same defaults), and the answer lists
    the created jobs in the request's order, each as that call returns it. If any item is
    refused nothing is created: 422 `invalid_field` (409 `conflict` when every refused item's
    name is taken, in the tenant or by an earlier item) with `details.field` = `jobs` and
    `details.errors`, one `{index, field, code, message}` per refused item (`index` into
    `jobs`; `field`, `code` and `message` as the single create names them, e.g. `field` =
    `schedule.expression`). No item or more than 1,000: 400 on `jobs`. Quotas count the whole
    batch (409 `quota_exceeded`); the body limit (`max_body_bytes`) applies to the whole body.

    Args:
        body (JobBatchInput): `POST /api/v1/jobs/batch`: the jobs to create, each exactly a `POST
            /api/v1/jobs` body.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Union[ErrorBody, JobBatch]]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: Union[AuthenticatedClient, Client],
    body: JobBatchInput,
) -> Optional[Union[ErrorBody, JobBatch]]:
    """Create up to 1,000 jobs at once (editor), all or none. Each item is what `POST
    /api/v1/jobs` takes, checked as it checks it (with the same defaults), and the answer lists
    the created jobs in the request's order, each as that call returns it. If any item is
    refused nothing is created: 422 `invalid_field` (409 `conflict` when every refused item's
    name is taken, in the tenant or by an earlier item) with `details.field` = `jobs` and
    `details.errors`, one `{index, field, code, message}` per refused item (`index` into
    `jobs`; `field`, `code` and `message` as the single create names them, e.g. `field` =
    `schedule.expression`). No item or more than 1,000: 400 on `jobs`. Quotas count the whole
    batch (409 `quota_exceeded`); the body limit (`max_body_bytes`) applies to the whole body.

    Args:
        body (JobBatchInput): `POST /api/v1/jobs/batch`: the jobs to create, each exactly a `POST
            /api/v1/jobs` body.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Union[ErrorBody, JobBatch]
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
