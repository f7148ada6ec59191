// A JavaScript job (QuickJS-NG inside the wasm sandbox). scriptArgs[1] is the run's
// params (JSON); console.log lines go to the run's log; the last line, if JSON, is the
// run's output. Throwing fails the run with the error as its message.
const params = JSON.parse(scriptArgs[1]);
const words = (params.text || "hello sundial").split(/\s+/);
console.log(`counted ${words.length} words`);
console.log(JSON.stringify({ words: words.length, longest: words.reduce((a, b) => (b.length > a.length ? b : a)) }));
