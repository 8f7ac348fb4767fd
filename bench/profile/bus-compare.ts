/** npx tsx bench/profile/bus-compare.ts: Kafka bus figures (KAFKA_BROKERS) three times, to compare with another build in the same session. */
import { KafkaBus } from '../../src/adapters/bus/kafka.js';
import { busFigures } from '../store.js';

for (let round = 0; round < 3; round++) {
  const kafka = new KafkaBus({ brokers: process.env.KAFKA_BROKERS!.split(','), clientId: 'bench' });
  for (const row of await busFigures('Kafka bus', kafka)) console.log(row.join(' | '));
  await kafka.close();
}
process.exit(0);
