import { fromEnv, type FromEnvInit } from '@aws-sdk/credential-provider-env';

/**
 * Stands in for `@aws-sdk/credential-provider-node` in the Lambda bundles (an esbuild alias set by
 * fleetward-function.ts). Lambda always puts the execution role's credentials in the environment
 * (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), which is the first link of the SDK's default
 * chain; the other links (SSO, shared ini files, web identity, container and instance metadata) can never answer
 * there, yet they carry the STS, SSO and sign-in clients: about 85 KB, a sixth of every bundle.
 */
export const defaultProvider = (init: FromEnvInit = {}) => fromEnv(init);
