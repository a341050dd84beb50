// An owner built on @node-idempotency/core 1.0.11 and its in-memory
// storage (testdata/npm/owners). There is no @node-idempotency/express on
// the registry (its README links one), so this file is the express
// integration, written after @node-idempotency/nestjs 1.0.4's interceptor
// (dist/interceptors/node-idempotency.iterceptor.js): onRequest before the
// handler, the cached response replayed with Idempotent-Replayed: true,
// onResponse after it, and the library's errors answered with the statuses
// of @node-idempotency/shared 1.0.3's idempotency2HttpCodeMap
// (dist/http.js): fingerprint mismatch 422, key missing or too long 400,
// request in progress 409 with Retry-After: 1.
//
// POST /charges makes one charge (charges.js). With ENFORCE=1 the
// library's enforceIdempotency option is on.
const express = require('express');
const { Idempotency, IdempotencyError, IdempotencyErrorCodes } = require('@node-idempotency/core');
const { MemoryStorageAdapter } = require('@node-idempotency/storage-adapter-memory');
const { charge, listen } = require('./charges');

const httpCodes = {
	[IdempotencyErrorCodes.IDEMPOTENCY_FINGERPRINT_MISSMATCH]: 422,
	[IdempotencyErrorCodes.IDEMPOTENCY_KEY_LEN_EXEEDED]: 400,
	[IdempotencyErrorCodes.IDEMPOTENCY_KEY_MISSING]: 400,
	[IdempotencyErrorCodes.REQUEST_IN_PROGRESS]: 409,
};
const idempotency = new Idempotency(new MemoryStorageAdapter(), {
	enforceIdempotency: process.env.ENFORCE === '1',
});

// nodeIdempotency is the middleware: it answers a replay or an error
// itself, and otherwise lets the handler run and saves what it sends.
function nodeIdempotency(req, res, next) {
	const ireq = { headers: req.headers, body: req.body, path: req.originalUrl, method: req.method };
	idempotency.onRequest(ireq).then((cached) => {
		if (cached) {
			const extra = cached.additional || {};
			if (extra['Content-Type']) {
				res.set('Content-Type', extra['Content-Type']);
			}
			res.set('Idempotent-Replayed', 'true');
			res.status(extra.statusCode || 200).send(cached.body);
			return;
		}
		const json = res.json.bind(res);
		res.json = (body) => {
			const additional = { statusCode: res.statusCode, 'Content-Type': 'application/json' };
			idempotency.onResponse(ireq, { body, additional }).then(() => json(body), next);
		};
		next();
	}, (err) => {
		if (!(err instanceof IdempotencyError)) {
			next(err);
			return;
		}
		if (err.code === IdempotencyErrorCodes.REQUEST_IN_PROGRESS) {
			res.set('Retry-After', '1');
		}
		res.status(httpCodes[err.code] || 500).json({ message: err.message });
	});
}

const app = express();
app.use(express.json());
app.post('/charges', nodeIdempotency, charge);
listen(app);
