import { expect } from 'chai';

/** Asserts an error body in the given style: B's code table or A's error name. */
export function expectError(style: 'a' | 'b', res: { status: number; body: any }, status: number, code: string, aName: string): void {
  expect(res.status, JSON.stringify(res.body)).to.equal(status);
  if (style === 'b') {
    expect(res.body).to.include({ code, statusCode: status });
    expect(res.body.error).to.be.a('string');
    expect(res.body.message).to.be.a('string');
    expect(res.body).to.not.have.property('success');
  } else {
    expect(res.body).to.include({ success: false, error: aName });
    expect(res.body.message).to.be.a('string');
    expect(res.body).to.not.have.property('code');
  }
}

/** The resource inside a success body, checking the style's envelope. */
export function dataOf(style: 'a' | 'b', res: { status: number; body: any }): any {
  if (style === 'a') {
    expect(res.body, JSON.stringify(res.body)).to.include({ success: true });
    expect(res.body).to.have.property('message');
    return res.body.data;
  }
  expect(res.body).to.not.have.property('success');
  return res.body;
}

/** Items and pagination of a list body, checking the style's shape. */
export function listOf(style: 'a' | 'b', res: { body: any }, plural: string): { items: any[]; pagination: any } {
  if (style === 'a') {
    expect(res.body.success).to.equal(true);
    const data = res.body.data;
    expect(data).to.have.property(plural);
    expect(data.pagination).to.have.all.keys('page', 'limit', 'total', 'totalPages');
    return { items: data[plural], pagination: data.pagination };
  }
  expect(res.body.pagination).to.have.all.keys('page', 'limit', 'total', 'totalPages', 'hasMore');
  expect(res.body.data).to.be.an('array');
  return { items: res.body.data, pagination: res.body.pagination };
}
