from http import HTTPStatus
from typing import Any, Optional, Union

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response
from ... import errors

from ...models.error_body import ErrorBody
from ...models.register_request import RegisterRequest
from ...models.registered import Registered


def _get_kwargs(
    *,
    body: RegisterRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/executors/register",
    }

    _body = body.to_dict()

    _kwargs["json"] = _body
    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: Union[AuthenticatedClient, Client], response: httpx.Response
) -> Optional[Union[ErrorBody, Registered]]:
    if response.status_code == 200:
        response_200 = Registered.from_dict(response.json())

        return response_200
    if response.status_code == 400:
        response_400 = ErrorBody.from_dict(response.json())

        return response_400
    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())

        return response_401
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
    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: Union[AuthenticatedClient, Client], response: httpx.Response
) -> Response[Union[ErrorBody, Registered]]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: RegisterRequest,
) -> Response[Union[ErrorBody, Registered]]:
    """Register (or re-register) an executor of an app. Signed with the app secret. Each
    handler the app has no job for yet creates one (stopped); a registration adding more
    than `max_new_handlers_per_registration` of them, or taking the app past
    `max_handlers_per_app` or the tenant past `max_jobs`, is refused with 409
    `quota_exceeded` and registers nothing.

    Args:
        body (RegisterRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Union[ErrorBody, Registered]]
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
    client: AuthenticatedClient,
    body: RegisterRequest,
) -> Optional[Union[ErrorBody, Registered]]:
    """Register (or re-register) an executor of an app. Signed with the app secret. Each
    handler the app has no job for yet creates one (stopped); a registration adding more
    than `max_new_handlers_per_registration` of them, or taking the app past
    `max_handlers_per_app` or the tenant past `max_jobs`, is refused with 409
    `quota_exceeded` and registers nothing.

    Args:
        body (RegisterRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Union[ErrorBody, Registered]
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: RegisterRequest,
) -> Response[Union[ErrorBody, Registered]]:
    """Register (or re-register) an executor of an app. Signed with the app secret. Each
    handler the app has no job for yet creates one (stopped); a registration adding more
    than `max_new_handlers_per_registration` of them, or taking the app past
    `max_handlers_per_app` or the tenant past `max_jobs`, is refused with 409
    `quota_exceeded` and registers nothing.

    Args:
        body (RegisterRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Union[ErrorBody, Registered]]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: RegisterRequest,
) -> Optional[Union[ErrorBody, Registered]]:
    """Register (or re-register) an executor of an app. Signed with the app secret. Each
    handler the app has no job for yet creates one (stopped); a registration adding more
    than `max_new_handlers_per_registration` of them, or taking the app past
    `max_handlers_per_app` or the tenant past `max_jobs`, is refused with 409
    `quota_exceeded` and registers nothing.

    Args:
        body (RegisterRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Union[ErrorBody, Registered]
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
