import { describe, expect, it } from 'vitest';
import { withoutCredentials } from '../../src/shared/without-credentials.js';

describe('withoutCredentials', () => {
  it('hides the password of every URL and the value of every option that holds a secret, nothing else', () => {
    expect(withoutCredentials('connect to mongodb+srv://app:s3cr%40t@cluster0.example.net/db?retryWrites=true failed')).toBe(
      'connect to mongodb+srv://app:***@cluster0.example.net/db?retryWrites=true failed',
    );
    expect(withoutCredentials('mongodb://a:b@h1:27017,h2:27017/db?replicaSet=rs0&authSource=admin')).toBe('mongodb://a:***@h1:27017,h2:27017/db?replicaSet=rs0&authSource=admin');
    expect(
      withoutCredentials('mongodb://h/db?tls=true&tlsCertificateKeyFile=/k.pem&tlsCertificateKeyFilePassword=pem-pass&authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:tok123 next'),
    ).toBe('mongodb://h/db?tls=true&tlsCertificateKeyFile=/k.pem&tlsCertificateKeyFilePassword=***&authMechanism=MONGODB-AWS&authMechanismProperties=*** next');
    expect(withoutCredentials('esdb://admin:changeit@es:2113?tls=false&keepAliveTimeout=10000')).toBe('esdb://admin:***@es:2113?tls=false&keepAliveTimeout=10000');
    expect(withoutCredentials('smtp://h:25/?apiToken=t0k&clientSecret=x&name=y')).toBe('smtp://h:25/?apiToken=***&clientSecret=***&name=y');
    expect(withoutCredentials('no URL here: just text')).toBe('no URL here: just text');
  });
});
