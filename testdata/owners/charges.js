// The effect both Node owners guard: a charge. charge(req, res) works for
// 300 ms, makes one charge (the count in $COUNT_FILE goes up by one) and
// answers 201 {"id":"ch_N","amount":…}; listen(app) serves app on
// 127.0.0.1, on a free port that it prints as "listening PORT".
const fs = require('fs');

let charges = 0;

async function charge(req, res) {
	await new Promise((r) => setTimeout(r, 300));
	charges++;
	if (process.env.COUNT_FILE) {
		fs.writeFileSync(process.env.COUNT_FILE, `${charges}\n`);
	}
	res.status(201).json({ id: `ch_${charges}`, amount: req.body.amount });
}

function listen(app) {
	const server = app.listen(0, '127.0.0.1', () => {
		process.stdout.write(`listening ${server.address().port}\n`);
	});
}

module.exports = { charge, listen };
