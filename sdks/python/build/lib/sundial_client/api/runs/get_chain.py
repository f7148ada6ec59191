from http import HTTPStatus
from typing import Any, Optional, Union

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response
from ... import errors

from ...models.chain_out import ChainOut
from ...models.error_body import ErrorBody


def _get_kwargs(
    chain_id: str,
) -> dict[str, Any]:
    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/chains/{chain_id}".format(
            chain_id=chain_id,
        ),
    }

    return _kwargs


def _parse_response(
    *, client: Union[AuthenticatedClient, Client], response: httpx.Response
) -> Optional[Union[ChainOut, ErrorBody]]:
    if response.status_code == 200:
        response_200 = ChainOut.from_dict(response.json())

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
) -> Response[Union[ChainOut, ErrorBody]]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    chain_id: str,
    *,
    client: Union[AuthenticatedClient, Client],
) -> Response[Union[ChainOut, ErrorBody]]:
    """The tree of a chain (viewer): its runs with state, attempt and timings, the edge that
    fired each, and the edges that did not fire and why (condition not met, parent still
    running, child job stopped, a fan-in waiting for its other parents).

    Args:
        chain_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Union[ChainOut, ErrorBody]]
    """

    kwargs = _get_kwargs(
        chain_id=chain_id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    chain_id: str,
    *,
    client: Union[AuthenticatedClient, Client],
) -> Optional[Union[ChainOut, ErrorBody]]:
    """The tree of a chain (viewer): its runs with state, attempt and timings, the edge that
    fired each, and the edges that did not fire and why (condition not met, parent still
    running, child job stopped, a fan-in waiting for its other parents).

    Args:
        chain_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Union[ChainOut, ErrorBody]
    """

    return sync_detailed(
        chain_id=chain_id,
        client=client,
    ).parsed


async def asyncio_detailed(
    chain_id: str,
    *,
    client: Union[AuthenticatedClient, Client],
) -> Response[Union[ChainOut, ErrorBody]]:
    """The tree of a chain (viewer): its runs with state, attempt and timings, the edge that
    fired each, and the edges that did not fire and why (condition not met, parent still
    running, child job stopped, a fan-in waiting for its other parents).

    Args:
        chain_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Union[ChainOut, ErrorBody]]
    """

    kwargs = _get_kwargs(
        chain_id=chain_id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    chain_id: str,
    *,
    client: Union[AuthenticatedClient, Client],
) -> Optional[Union[ChainOut, ErrorBody]]:
    """The tree of a chain (viewer): its runs with state, attempt and timings, the edge that
    fired each, and the edges that did not fire and why (condition not met, parent still
    running, child job stopped, a fan-in waiting for its other parents).

    Args:
        chain_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Union[ChainOut, ErrorBody]
    """

    return (
        await asyncio_detailed(
            chain_id=chain_id,
            client=client,
        )
    ).parsed
