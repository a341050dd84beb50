// An owner built on express-idempotency 1.0.6 (testdata/npm/owners), the
// way its README says to use it: the middleware on the route, and the
// handler returns early on a hit. POST /charges makes one charge
// (charges.js).
const express = require('express');
const { idempotency, getSharedIdempotencyService } = require('express-idempotency');
const { charge, listen } = require('./charges');

const app = express();
app.use(express.json());
app.post('/charges', idempotency(), (req, res) => {
	if (getSharedIdempotencyService().isHit(req)) {
		return; // the middleware has answered (a replay)
	}
	return charge(req, res);
});
listen(app);
