#!/usr/bin/env node
// The npm registry reachable here lacks other platforms' optional binaries (e.g.
// @rollup/rollup-darwin-arm64), so `npm install` leaves them out of package-lock.json and
// `npm ci` then calls the lock "not in sync". This adds the missing entries with their
// os/cpu, as a lock written elsewhere would hold them; npm ci skips them on this platform.
// Run after `npm install` changes the lock: `node scripts/lock-platform-packages.mjs`.
import fs from 'node:fs';

const lockPath = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(fs.readFileSync(lockPath, 'utf8'));
const packages = lock.packages;
const cpus = ['arm64', 'x64', 'ia32', 'arm', 'loong64', 'ppc64', 'riscv64', 's390x'];
const oses = ['android', 'darwin', 'freebsd', 'linux', 'openbsd', 'openharmony', 'win32'];
let added = 0;
for (const [path, info] of Object.entries(packages)) {
  for (const [name, range] of Object.entries(info.optionalDependencies ?? {})) {
    const where = `${path ? `${path}/` : ''}node_modules/${name}`;
    const hoisted = `node_modules/${name}`;
    if (packages[where] || packages[hoisted]) continue;
    const parts = name.split('/').pop().split('-');
    const os = parts.find((p) => oses.includes(p));
    const cpu = parts.find((p) => cpus.includes(p));
    if (!os || !cpu) continue;
    const version = range.replace(/^[\^~=]/, '');
    packages[hoisted] = {
      version,
      resolved: `https://registry.npmjs.org/${name}/-/${name.split('/').pop()}-${version}.tgz`,
      cpu: [cpu],
      license: 'MIT',
      optional: true,
      os: [os],
      ...(parts.includes('musl') ? { libc: ['musl'] } : parts.includes('gnu') || parts.includes('gnueabihf') ? { libc: ['glibc'] } : {}),
    };
    added += 1;
  }
}
lock.packages = Object.fromEntries(Object.entries(packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))));
fs.writeFileSync(lockPath, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`lock-platform-packages: added ${added} platform package entries`);
