// A real OAuth 2.1 authorization server for semcat's OAuth tests: the OpenID-certified npm package
// `oidc-provider`, on loopback, with dynamic client registration, PKCE (required), resource indicators
// (RFC 8707: JWT access tokens whose `aud` is the requested resource) and an interaction that signs in
// the test user and approves what the client asked for, with no page and no person.
//
// Usage: node as.mjs MODULES_DIR PORT [PORT ...]
//   MODULES_DIR holds node_modules/oidc-provider; one issuer http://127.0.0.1:PORT per port, each with its
//   own RSA signing key. Prints one JSON line {"issuers": [...]} once every issuer listens; runs until killed.
// Test knobs, chosen by the client at registration (client metadata `client_name`):
//   "short-lived" -> access tokens live 1 s; otherwise 300 s.
import * as crypto from 'node:crypto';
import * as http from 'node:http';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';

const [modulesDir, ...ports] = process.argv.slice(2);
if (!modulesDir || !ports.length) {
  console.error('usage: node as.mjs MODULES_DIR PORT [PORT ...]');
  process.exit(2);
}
const entry = path.join(modulesDir, 'node_modules', 'oidc-provider', 'lib', 'index.js');
const { default: Provider } = await import(pathToFileURL(entry).href);

const SCOPES = ['semcat:read', 'semcat:write'];
const USER = process.env.OIDC_TEST_USER || 'test-user';

function signingKey(n) {
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: `test-key-${n}-${crypto.randomUUID().slice(0, 8)}`,
    use: 'sig', alg: 'RS256' };
}

function makeProvider(issuer, n) {
  const provider = new Provider(issuer, {
    jwks: { keys: [signingKey(n)] },
    findAccount: (ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
    scopes: ['openid', 'offline_access', ...SCOPES],
    clientDefaults: { grant_types: ['authorization_code'], response_types: ['code'],
      token_endpoint_auth_method: 'none' },
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: (ctx, client, oneOf) => oneOf,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resource, client) => ({
          scope: SCOPES.join(' '),
          audience: resource,
          accessTokenFormat: 'jwt',
          accessTokenTTL: client.clientName === 'short-lived' ? 1 : 300,
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
    interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  });
  provider.proxy = false;
  return provider;
}

// Sign the test user in, then grant exactly what the client asked for (OIDC scopes and resource scopes).
async function interact(provider, req, res) {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, session } = details;
  let result;
  if (prompt.name === 'login') {
    result = { login: { accountId: USER } };
  } else if (prompt.name === 'consent') {
    const grant = details.grantId ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    const d = prompt.details;
    if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
    if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
    for (const [indicator, scopes] of Object.entries(d.missingResourceScopes || {})) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
    const grantId = await grant.save();
    result = { consent: details.grantId ? {} : { grantId } };
  } else {
    result = { error: 'access_denied', error_description: `unexpected prompt ${prompt.name}` };
  }
  await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: true });
}

const issuers = [];
await Promise.all(ports.map((port, n) => new Promise((resolve, reject) => {
  const issuer = `http://127.0.0.1:${port}`;
  const provider = makeProvider(issuer, n);
  const callback = provider.callback();
  const server = http.createServer((req, res) => {
    if (req.url.startsWith('/interaction/')) {
      interact(provider, req, res).catch((err) => {
        res.statusCode = 500;
        res.end(String(err && err.stack || err));
      });
      return;
    }
    callback(req, res);
  });
  server.on('error', reject);
  server.listen(Number(port), '127.0.0.1', () => { issuers[n] = issuer; resolve(); });
})));
console.log(JSON.stringify({ issuers }));
process.on('SIGTERM', () => process.exit(0));
