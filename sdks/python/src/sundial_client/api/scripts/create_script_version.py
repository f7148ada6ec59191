from http import HTTPStatus
from typing import Any, Optional, Union

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response
from ... import errors

from ...models.error_body import ErrorBody
from ...models.script_version_create import ScriptVersionCreate
from ...models.script_version_out import ScriptVersionOut


def _get_kwargs(
    id: str,
    *,
    body: ScriptVersionCreate,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/scripts/{id}/versions".format(
            id=id,
        ),
    }

    _body = body.to_dict()

    _kwargs["json"] = _body
    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: Union[AuthenticatedClient, Client], response: httpx.Response
) -> Optional[Union[ErrorBody, ScriptVersionOut]]:
    if response.status_code == 201:
        response_201 = ScriptVersionOut.from_dict(response.json())

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
    if response.status_code == 404:
        response_404 = ErrorBody.from_dict(response.json())

        return response_404
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
) -> Response[Union[ErrorBody, ScriptVersionOut]]:
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
    body: ScriptVersionCreate,
) -> Response[Union[ErrorBody, ScriptVersionOut]]:
    r"""Upload a new version; it becomes current (jobs that follow the script run it from their next run)
    (editor).

    Args:
        id (str):
        body (ScriptVersionCreate):  Example: {'note': 'friendlier', 'source': "print('hello
            again')\n"}.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Union[ErrorBody, ScriptVersionOut]]
    """

    kwargs = _get_kwargs(
        id=id,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: str,
    *,
    client: Union[AuthenticatedClient, Client],
    body: ScriptVersionCreate,
) -> Optional[Union[ErrorBody, ScriptVersionOut]]:
    r"""Upload a new version; it becomes current (jobs that follow the script run it from their next run)
    (editor).

    Args:
        id (str):
        body (ScriptVersionCreate):  Example: {'note': 'friendlier', 'source': "print('hello
            again')\n"}.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Union[ErrorBody, ScriptVersionOut]
    """

    return sync_detailed(
        id=id,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    id: str,
    *,
    client: Union[AuthenticatedClient, Client],
    body: ScriptVersionCreate,
) -> Response[Union[ErrorBody, ScriptVersionOut]]:
    r"""Upload a new version; it becomes current (jobs that follow the script run it from their next run)
    (editor).

    Args:
        id (str):
        body (ScriptVersionCreate):  Example: {'note': 'friendlier', 'source': "print('hello
            again')\n"}.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Union[ErrorBody, ScriptVersionOut]]
    """

    kwargs = _get_kwargs(
        id=id,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: str,
    *,
    client: Union[AuthenticatedClient, Client],
    body: ScriptVersionCreate,
) -> Optional[Union[ErrorBody, ScriptVersionOut]]:
    r"""Upload a new version; it becomes current (jobs that follow the script run it from their next run)
    (editor).

    Args:
        id (str):
        body (ScriptVersionCreate):  Example: {'note': 'friendlier', 'source': "print('hello
            again')\n"}.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Union[ErrorBody, ScriptVersionOut]
    """

    return (
        await asyncio_detailed(
            id=id,
            client=client,
            body=body,
        )
    ).parsed
