// Imported first by the processes that run Lambda code outside Lambda (`npm start`, `npm run bench`). The X-Ray SDK,
// which the handlers' Tracer loads, turns on an async hook with destroy tracking for every promise of the process at
// import, unless told to run in manual mode; outside Lambda tracing is off and the hook buys nothing. It cost the
// heartbeat bench about 7% of its CPU (registerDestroyHook and promise hooks in a profile of 10,000 machines).
process.env.AWS_XRAY_MANUAL_MODE ??= '1';
